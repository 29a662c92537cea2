"""HTTPS edges (`/edges/https`): read-only here (rows come from fixtures), each with its
routes; the platform's other HTTPS edge modules are not modelled (always null)."""

from __future__ import annotations

from typing import Any

from tunnelgw.services import crud, edges, paging
from tunnelgw.services.auth import Caller


async def get(caller: Caller, id: str) -> dict[str, Any]:  # noqa: A002 - the spec's parameter name
    edge, routes = await edges.read_https(caller, id)
    return edge.to_api(routes)


async def list(
    caller: Caller,
    limit: int = paging.MAX_LIMIT,
    before_id: str | None = None,
    filter: str | None = None,  # noqa: A002 - the spec's parameter name
) -> crud.Listed:
    return await edges.read_page(
        caller, "https", limit, before_id, filter, renderer=edges.with_routes
    )
