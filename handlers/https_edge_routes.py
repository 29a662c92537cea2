"""Routes of HTTPS edges (`/edges/https/{edge_id}/routes/{id}`): read-only here (rows come
from fixtures); the get operation only, for the `route` Refs of application sessions."""

from __future__ import annotations

from typing import Any

from tunnelgw.core.errors import ApiError, Code
from tunnelgw.models import EdgeRoute
from tunnelgw.services import auth
from tunnelgw.storage import db


async def get(edge_id: str, id: str) -> dict[str, Any]:  # noqa: A002 - the spec's name
    async with db.read() as unit:
        route = await unit.get(EdgeRoute, id)
    if route is None or route.account_id != auth.caller().account_id or route.edge_id != edge_id:
        raise ApiError(Code.NOT_FOUND, f"No route {id!r} of the HTTPS edge {edge_id!r}.", id=id)
    return route.to_api()
