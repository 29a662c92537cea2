"""The TLS edge backend module (`/edges/tls/{id}/backend`): spec section 4.8.

The module lives on the Edge row (`backend_id`, `backend_enabled`; `backend_enabled` None
means no module), the same one a TLS edge's `backend` field shows and its create and update
set. PUT replaces it, DELETE clears it and is idempotent.
"""

from __future__ import annotations

from typing import Any

from models import Edge
from models.edge import backend_module
from tunnelgw import auth, db, edges
from tunnelgw.errors import ApiError, Code
from tunnelgw.resources import Body


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


async def replace(id: str, body: Body = None) -> dict[str, Any]:  # noqa: A002
    caller = auth.caller()
    async with db.write() as unit:
        edge = await edges.get(unit, caller, "tls", id)
        await edges.set_backend(unit, caller, edge, body or {}, "backend_id")
    return _module(edge)


async def get(id: str) -> dict[str, Any]:  # noqa: A002
    async with db.read() as unit:
        return _module(await edges.get(unit, auth.caller(), "tls", id))


async def delete(id: str) -> tuple[None, int]:  # noqa: A002
    async with db.write() as unit:
        edge = await edges.get(unit, auth.caller(), "tls", id)
        edge.backend_id = None
        edge.backend_enabled = None
    return None, 204
