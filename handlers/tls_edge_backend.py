"""The TLS edge backend module (`/edges/tls/{id}/backend`): spec section 4.8.

The module lives on the Edge row (`backend_id`, `backend_enabled`; `backend_enabled` None
means no module), the same one a TLS edge's `backend` field shows and its create and update
set. PUT replaces it, DELETE clears it and is idempotent.
"""

from __future__ import annotations

from typing import Any

from tunnelgw.core.errors import ApiError, Code
from tunnelgw.models import Edge
from tunnelgw.models.edge import backend_module
from tunnelgw.services import edges
from tunnelgw.services.auth import Caller
from tunnelgw.services.crud import Body


def _module(edge: Edge) -> dict[str, Any]:
    """The edge's backend module in its API shape; 404 ERR_BACKEND_MODULE_NOT_SET if none."""
    module = backend_module(edge.backend_id, edge.backend_enabled)
    if module is None:
        raise ApiError(
            Code.BACKEND_MODULE_NOT_SET,
            f"The TLS edge {edge.id!r} has no backend module; set one with PUT.",
            id=edge.id,
        )
    return module


def requested_module(body: dict[str, Any]) -> tuple[str, bool | None, str]:
    """(backend_id, enabled, the field naming the backend) of a PUT body, flat or wrapped
    (`{"id": ..., "module": {...}}`); ApiError(400) for both forms at once or no backend."""
    module = body.get("module")
    field = "backend_id"
    if module is not None:
        flat = [name for name in ("enabled", "backend_id") if body.get(name) is not None]
        if flat:
            raise ApiError(
                Code.CONFLICTING_FIELDS,
                f"Send the module flat or wrapped in `module`, not both ({flat[0]} and module).",
                field="module",
            )
        body, field = module, "module.backend_id"
    backend_id = body.get("backend_id")
    if backend_id is None:
        raise ApiError(Code.MISSING_FIELD, f"{field} is required.", field=field)
    return backend_id, body.get("enabled"), field


async def replace(caller: Caller, id: str, body: Body = None) -> dict[str, Any]:  # noqa: A002
    backend_id, enabled, field = requested_module(body or {})
    module = {"backend_id": backend_id, "enabled": enabled}
    return _module(await edges.replace_backend(caller, id, module, field))


async def get(caller: Caller, id: str) -> dict[str, Any]:  # noqa: A002
    return _module(await edges.read(caller, "tls", id))


async def delete(caller: Caller, id: str) -> tuple[None, int]:  # noqa: A002
    await edges.clear_backend(caller, id)
    return None, 204
