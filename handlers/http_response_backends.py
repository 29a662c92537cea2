"""HTTP response backends (`/backends/http_response`): spec section 4.2."""

from __future__ import annotations

from typing import Any

from tunnelgw.core import ids
from tunnelgw.core.errors import ApiError, Code
from tunnelgw.models import HttpResponseBackend
from tunnelgw.services import crud
from tunnelgw.services.auth import Caller
from tunnelgw.services.crud import Body

DEFAULT_STATUS = 200
FIELDS = {**crud.DESCRIBED_FIELDS, "body": "body"}


def _headers(headers: dict[str, str]) -> dict[str, str] | None:
    """Lowercased header names; None for no headers; 400 for names equal after lowercasing."""
    lowered: dict[str, str] = {}
    for name, value in headers.items():
        key = name.lower()
        if key in lowered:
            raise ApiError(
                Code.INVALID_FIELD,
                f"headers: {name!r} repeats a header name.",
                field=f"headers.{name}",
            )
        lowered[key] = value
    return lowered or None


def _apply(backend: HttpResponseBackend, body: dict[str, Any]) -> None:
    crud.apply_patch(backend, body, FIELDS)
    if body.get("headers") is not None:
        backend.headers = _headers(body["headers"])
    if body.get("status_code"):  # 0 and null are unset
        backend.status_code = body["status_code"]


async def create(caller: Caller, body: Body = None) -> tuple[dict[str, Any], int]:
    caller = caller
    backend = HttpResponseBackend.new(
        id=ids.new_id(HttpResponseBackend.PREFIX),
        account_id=caller.account_id,
        status_code=DEFAULT_STATUS,
    )
    _apply(backend, body or {})
    return (await crud.add(backend)).to_api(), 201


async def update(caller: Caller, id: str, body: Body = None) -> dict[str, Any]:  # noqa: A002
    return await crud.update_one(
        caller, HttpResponseBackend, id, lambda backend: _apply(backend, body or {})
    )


# The operations that are the shared CRUD ones (tunnelgw.services.crud.Resource).
resource = crud.Resource(HttpResponseBackend, "backends")
get, list, delete = (
    resource.get,
    resource.list,
    resource.delete,
)
