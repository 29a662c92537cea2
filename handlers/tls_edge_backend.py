"""The TLS edge backend module (`/edges/tls/{id}/backend`): spec section 4.8.

The module lives on the Edge row (`backend_id`, `backend_enabled`; `backend_enabled` None
means no module). PUT replaces it, DELETE clears it and is idempotent.
"""

from __future__ import annotations

from typing import Any

from models import Edge, TunnelGroupBackend
from tunnelgw import auth, db, resources, urls
from tunnelgw.auth import Caller
from tunnelgw.db import Unit
from tunnelgw.errors import ApiError, Code
from tunnelgw.resources import Body


async def _tls_edge(unit: Unit, caller: Caller, edge_id: str) -> Edge:
    """The caller's TLS edge `edge_id`; ApiError(404 ERR_NOT_FOUND) otherwise."""
    edge = await resources.get_owned(unit, Edge, caller, edge_id)
    if edge.kind != "tls":
        raise ApiError(Code.NOT_FOUND, f"No TLS edge with id {edge_id!r}.", id=edge_id)
    return edge


def _module(edge: Edge) -> dict[str, Any]:
    """The edge's backend module in its API shape; 404 ERR_BACKEND_MODULE_NOT_SET if none."""
    if edge.backend_enabled is None or edge.backend_id is None:
        raise ApiError(
            Code.BACKEND_MODULE_NOT_SET,
            f"The TLS edge {edge.id!r} has no backend module; set one with PUT.",
            id=edge.id,
        )
    return {
        "enabled": edge.backend_enabled,
        "backend": urls.ref(TunnelGroupBackend.PATH, edge.backend_id),
    }


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


async def replace(id: str, body: Body = None) -> dict[str, Any]:  # noqa: A002
    backend_id, enabled, field = requested_module(body or {})
    caller = auth.caller()
    async with db.write() as unit:
        edge = await _tls_edge(unit, caller, id)
        backend = await resources.get_reference(unit, TunnelGroupBackend, caller, backend_id, field)
        edge.backend_id = backend.id
        edge.backend_enabled = True if enabled is None else bool(enabled)
    return _module(edge)


async def get(id: str) -> dict[str, Any]:  # noqa: A002
    async with db.read() as unit:
        return _module(await _tls_edge(unit, auth.caller(), id))


async def delete(id: str) -> tuple[None, int]:  # noqa: A002
    async with db.write() as unit:
        edge = await _tls_edge(unit, auth.caller(), id)
        edge.backend_id = None
        edge.backend_enabled = None
    return None, 204
