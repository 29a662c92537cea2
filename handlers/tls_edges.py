"""TLS edges (`/edges/tls`): hostports and the backend module, the one the TLS edge backend
module operations (`/edges/tls/{id}/backend`) manage. The platform's other TLS edge modules
are not modelled (always null)."""

from __future__ import annotations

from typing import Any

from tunnelgw.core import ids
from tunnelgw.models import Edge
from tunnelgw.models.edge import KIND_PREFIXES
from tunnelgw.services import crud, edges, paging
from tunnelgw.services.auth import Caller
from tunnelgw.services.crud import Body


async def create(caller: Caller, body: Body = None) -> tuple[dict[str, Any], int]:
    caller = caller
    edge = Edge.new(id=ids.new_id(KIND_PREFIXES["tls"]), account_id=caller.account_id, kind="tls")
    return (await edges.create_tls(caller, edge, body or {})).to_api(), 201


async def get(caller: Caller, id: str) -> dict[str, Any]:  # noqa: A002 - the spec's parameter name
    return (await edges.read(caller, "tls", id)).to_api()


async def list(
    caller: Caller,
    limit: int = paging.MAX_LIMIT,
    before_id: str | None = None,
    filter: str | None = None,  # noqa: A002 - the spec's parameter name
) -> crud.Listed:
    return await edges.read_page(caller, "tls", limit, before_id, filter)


async def update(caller: Caller, id: str, body: Body = None) -> dict[str, Any]:  # noqa: A002
    return (await edges.update_tls(caller, id, body or {})).to_api()


async def delete(caller: Caller, id: str) -> tuple[None, int]:  # noqa: A002
    await edges.delete(caller, "tls", id)
    return None, 204
