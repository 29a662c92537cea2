"""HTTPS edges (`/edges/https`): read-only here (rows come from fixtures), each with its
routes; the platform's other HTTPS edge modules are not modelled (always null)."""

from __future__ import annotations

from typing import Any

from tunnelgw import auth, db, edges, resources

PATH = "/edges/https"


async def get(id: str) -> dict[str, Any]:  # noqa: A002 - the spec's parameter name
    async with db.read() as unit:
        edge = await edges.get(unit, auth.caller(), "https", id)
        routes = await edges.routes_of(unit, [edge.id])
    return edge.to_api(routes[edge.id])


async def list(
    limit: int = resources.MAX_LIMIT,
    before_id: str | None = None,
    beforeId: str | None = None,  # noqa: N803
) -> dict[str, Any]:
    async with db.read() as unit:
        rows, more = await edges.page(unit, auth.caller(), "https", limit, before_id, beforeId)
        routes = await edges.routes_of(unit, [row.id for row in rows])
    return resources.envelope(
        "https_edges", PATH, rows, limit, more=more, render=lambda row: row.to_api(routes[row.id])
    )
