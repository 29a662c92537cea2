"""Edges by kind: the caller's edge of one kind (the edge table holds all three), a page of
them, and the backend module that TLS edges (create, update, `/edges/tls/{id}/backend`)
share with TCP edges and HTTPS edge routes.
"""

from __future__ import annotations

from typing import Any

from tunnelgw.core.errors import ApiError, Code
from tunnelgw.models import Edge, EdgeRoute, TunnelGroupBackend
from tunnelgw.models.edge import KIND_PREFIXES
from tunnelgw.services import crud, paging
from tunnelgw.services.auth import Caller
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
