"""HTTPS edges (`/edges/https`): read-only here (rows come from fixtures), each with its
routes; the platform's other HTTPS edge modules are not modelled (always null)."""

from __future__ import annotations

import builtins
from collections.abc import Callable
from typing import Any

from tunnelgw.models import Edge
from tunnelgw.services import auth, crud, edges, paging
from tunnelgw.storage import db
from tunnelgw.storage.unit import Unit


async def get(id: str) -> dict[str, Any]:  # noqa: A002 - the spec's parameter name
    async with db.read() as unit:
        edge = await edges.get(unit, auth.caller(), "https", id)
        routes = await edges.routes_of(unit, [edge.id])
    return edge.to_api(routes[edge.id])


async def list(
    limit: int = paging.MAX_LIMIT,
    before_id: str | None = None,
    filter: str | None = None,  # noqa: A002 - the spec's parameter name
) -> crud.Listed:
    return await edges.read_page("https", limit, before_id, filter, renderer=_with_routes)


async def _with_routes(unit: Unit, rows: builtins.list[Edge]) -> Callable[[Edge], dict[str, Any]]:
    """Renders the page's edges with their routes (read for the whole page at once)."""
    routes = await edges.routes_of(unit, [row.id for row in rows])
    return lambda row: row.to_api(routes[row.id])
