"""Edges by kind: the caller's edge of one kind (the edge table holds all three), a page of
them, an HTTPS edge's routes, TLS edges written, and the backend module that TLS edges
(create, update, `/edges/tls/{id}/backend`) share with TCP edges and HTTPS edge routes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tunnelgw.core.errors import ApiError, Code
from tunnelgw.models import Edge, EdgeRoute, TunnelGroupBackend
from tunnelgw.models.edge import KIND_PREFIXES
from tunnelgw.services import crud, paging, quotas
from tunnelgw.services.auth import Caller
from tunnelgw.storage import db
from tunnelgw.storage.unit import Lock, Unit

KIND_NAMES = {"https": "HTTPS", "tcp": "TCP", "tls": "TLS"}


async def get(unit: Unit, caller: Caller, kind: str, edge_id: str, *, lock: Lock = False) -> Edge:
    """The caller's edge `edge_id` of `kind`; ApiError(404 ERR_NOT_FOUND) otherwise."""
    edge = await unit.get(Edge, edge_id, lock=lock)
    if edge is None or edge.account_id != caller.account_id or edge.kind != kind:
        raise ApiError(
            Code.NOT_FOUND, f"No {KIND_NAMES[kind]} edge with id {edge_id!r}.", id=edge_id
        )
    return edge


async def read_page(
    caller: Caller,
    kind: str,
    limit: int,
    before_id: str | None,
    expression: str | None,
    *,
    renderer: paging.Renderer | None = None,
) -> crud.Listed:
    """LIST of the caller's edges of `kind` (`/edges/{kind}`, envelope `{kind}_edges`, items
    of the spec schema `HttpsEdge`, `TcpEdge` or `TlsEdge`)."""
    return await crud.read_page(
        caller,
        Edge,
        f"{kind}_edges",
        limit,
        before_id,
        expression,
        renderer=renderer,
        prefix=KIND_PREFIXES[kind],
        schema=f"{kind.capitalize()}Edge",
        path=f"{Edge.PATH}/{kind}",
    )


async def routes_of(unit: Unit, edge_ids: list[str]) -> dict[str, list[dict[str, Any]]]:
    """The routes (API shapes, oldest first) of each of the HTTPS edges `edge_ids`."""
    routes: dict[str, list[dict[str, Any]]] = {id_: [] for id_ in edge_ids}
    rows = await unit.select_in(EdgeRoute, "edge_id", edge_ids)
    for route in sorted(rows, key=lambda row: row.id):
        routes[route.edge_id].append(route.to_api())
    return routes


async def set_backend(
    unit: Unit, caller: Caller, edge: Edge, module: dict[str, Any], field: str
) -> None:
    """Set the edge's backend module from a request's `{enabled, backend_id}` (`enabled`
    absent or null: true). The backend must be the caller's (ApiError(404
    ERR_REFERENCE_NOT_FOUND) naming `field`); it is share-locked so that a concurrent
    delete of the backend waits for this unit, then finds the edge using it."""
    backend = await crud.get_reference(
        unit, TunnelGroupBackend, caller, module["backend_id"], field, lock="share"
    )
    enabled = module.get("enabled")
    edge.backend_id = backend.id
    edge.backend_enabled = True if enabled is None else bool(enabled)


async def read(caller: Caller, kind: str, edge_id: str) -> Edge:
    """GET: the caller's edge `edge_id` of `kind` (404 otherwise)."""
    async with db.read() as unit:
        return await get(unit, caller, kind, edge_id)


async def read_https(caller: Caller, edge_id: str) -> tuple[Edge, list[dict[str, Any]]]:
    """GET /edges/https/{id}: the caller's HTTPS edge and its routes."""
    async with db.read() as unit:
        edge = await get(unit, caller, "https", edge_id)
        routes = await routes_of(unit, [edge.id])
    return edge, routes[edge.id]


async def with_routes(unit: Unit, rows: list[Edge]) -> Callable[[Edge], dict[str, Any]]:
    """Renders a page's HTTPS edges with their routes (read for the whole page at once)."""
    routes = await routes_of(unit, [row.id for row in rows])
    return lambda row: row.to_api(routes[row.id])


async def read_route(caller: Caller, edge_id: str, route_id: str) -> EdgeRoute:
    """GET /edges/https/{edge_id}/routes/{id}: the caller's route of that HTTPS edge (404
    otherwise)."""
    async with db.read() as unit:
        route = await unit.get(EdgeRoute, route_id)
    if route is None or route.account_id != caller.account_id or route.edge_id != edge_id:
        raise ApiError(
            Code.NOT_FOUND, f"No route {route_id!r} of the HTTPS edge {edge_id!r}.", id=route_id
        )
    return route


async def _apply_tls(unit: Unit, caller: Caller, edge: Edge, body: dict[str, Any]) -> None:
    crud.apply_patch(edge, body, crud.DESCRIBED_FIELDS)
    if body.get("hostports") is not None:
        edge.hostports = [*body["hostports"]]
    if body.get("backend") is not None:
        await set_backend(unit, caller, edge, body["backend"], "backend.backend_id")


async def create_tls(caller: Caller, edge: Edge, body: dict[str, Any]) -> Edge:
    """CREATE /edges/tls: `edge` with the body's fields and backend module, admitted by its
    quota and inserted."""
    async with db.write() as unit:
        await _apply_tls(unit, caller, edge, body)
        await quotas.add(unit, edge)
    return edge


async def update_tls(caller: Caller, edge_id: str, body: dict[str, Any]) -> Edge:
    """PATCH /edges/tls/{id}: the body's fields and backend module set on the caller's edge."""
    async with db.write() as unit:
        edge = await get(unit, caller, "tls", edge_id)
        await _apply_tls(unit, caller, edge, body)
    return edge


async def delete(caller: Caller, kind: str, edge_id: str) -> None:
    """DELETE: the caller's edge `edge_id` of `kind` removed."""
    async with db.write() as unit:
        await unit.delete(await get(unit, caller, kind, edge_id))


async def replace_backend(caller: Caller, edge_id: str, module: dict[str, Any], field: str) -> Edge:
    """PUT /edges/tls/{id}/backend: the TLS edge's backend module replaced (`set_backend`)."""
    async with db.write() as unit:
        edge = await get(unit, caller, "tls", edge_id)
        await set_backend(unit, caller, edge, module, field)
    return edge


async def clear_backend(caller: Caller, edge_id: str) -> None:
    """DELETE /edges/tls/{id}/backend: the TLS edge's backend module removed (idempotent)."""
    async with db.write() as unit:
        edge = await get(unit, caller, "tls", edge_id)
        edge.backend_id = None
        edge.backend_enabled = None
