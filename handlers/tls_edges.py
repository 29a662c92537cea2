"""TLS edges (`/edges/tls`): hostports and the backend module, the one the TLS edge backend
module operations (`/edges/tls/{id}/backend`) manage. The platform's other TLS edge modules
are not modelled (always null)."""

from __future__ import annotations

from typing import Any

from tunnelgw.core import ids
from tunnelgw.models import Edge
from tunnelgw.models.edge import KIND_PREFIXES
from tunnelgw.services import auth, crud, edges, paging, quotas
from tunnelgw.services.auth import Caller
from tunnelgw.services.crud import Body
from tunnelgw.storage import db
from tunnelgw.storage.unit import Unit


async def _apply(unit: Unit, caller: Caller, edge: Edge, body: dict[str, Any]) -> None:
    crud.apply_patch(edge, body, crud.DESCRIBED_FIELDS)
    if body.get("hostports") is not None:
        edge.hostports = [*body["hostports"]]
    if body.get("backend") is not None:
        await edges.set_backend(unit, caller, edge, body["backend"], "backend.backend_id")


async def create(body: Body = None) -> tuple[dict[str, Any], int]:
    caller = auth.caller()
    edge = Edge.new(id=ids.new_id(KIND_PREFIXES["tls"]), account_id=caller.account_id, kind="tls")
    async with db.write() as unit:
        await _apply(unit, caller, edge, body or {})
        await quotas.add(unit, edge)
    return edge.to_api(), 201


async def get(id: str) -> dict[str, Any]:  # noqa: A002 - the spec's parameter name
    async with db.read() as unit:
        return (await edges.get(unit, auth.caller(), "tls", id)).to_api()


async def list(
    limit: int = paging.MAX_LIMIT,
    before_id: str | None = None,
    filter: str | None = None,  # noqa: A002 - the spec's parameter name
) -> crud.Listed:
    return await edges.read_page("tls", limit, before_id, filter)


async def update(id: str, body: Body = None) -> dict[str, Any]:  # noqa: A002
    caller = auth.caller()
    async with db.write() as unit:
        edge = await edges.get(unit, caller, "tls", id)
        await _apply(unit, caller, edge, body or {})
    return edge.to_api()


async def delete(id: str) -> tuple[None, int]:  # noqa: A002
    async with db.write() as unit:
        await unit.delete(await edges.get(unit, auth.caller(), "tls", id))
    return None, 204
