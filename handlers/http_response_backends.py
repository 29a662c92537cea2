"""HTTP response backends (`/backends/http_response`): spec section 4.2."""

from __future__ import annotations

from typing import Any

from models import HttpResponseBackend
from tunnelgw import auth, db, ids, resources
from tunnelgw.errors import ApiError, Code
from tunnelgw.resources import Body

DEFAULT_STATUS = 200
FIELDS = {**resources.DESCRIBED_FIELDS, "body": "body"}


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
    resources.apply_patch(backend, body, FIELDS)
    if body.get("headers") is not None:
        backend.headers = _headers(body["headers"])
    if body.get("status_code"):  # 0 and null are unset
        backend.status_code = body["status_code"]


async def create(body: Body = None) -> tuple[dict[str, Any], int]:
    caller = auth.caller()
    backend = HttpResponseBackend.new(
        id=ids.new_id(HttpResponseBackend.PREFIX),
        account_id=caller.account_id,
        status_code=DEFAULT_STATUS,
    )
    _apply(backend, body or {})
    async with db.write() as unit:
        unit.add(backend)
    return backend.to_api(), 201


async def get(id: str) -> dict[str, Any]:  # noqa: A002 - the spec's parameter name
    return await resources.read_one(HttpResponseBackend, id)


async def list(
    limit: int = resources.MAX_LIMIT,
    before_id: str | None = None,
    beforeId: str | None = None,  # noqa: N803
    filter: str | None = None,  # noqa: A002 - the spec's parameter name
) -> resources.Listed:
    return await resources.read_page(
        HttpResponseBackend, "backends", limit, before_id, beforeId, filter
    )


async def update(id: str, body: Body = None) -> dict[str, Any]:  # noqa: A002
    return await resources.update_one(
        HttpResponseBackend, id, lambda backend: _apply(backend, body or {})
    )


async def delete(id: str) -> tuple[None, int]:  # noqa: A002
    return await resources.delete_one(HttpResponseBackend, id)
