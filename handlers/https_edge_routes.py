"""Routes of HTTPS edges (`/edges/https/{edge_id}/routes/{id}`): read-only here (rows come
from fixtures); the get operation only, for the `route` Refs of application sessions."""

from __future__ import annotations

from typing import Any

from tunnelgw.services import edges
from tunnelgw.services.auth import Caller


async def get(caller: Caller, edge_id: str, id: str) -> dict[str, Any]:  # noqa: A002 - the spec's name
    return (await edges.read_route(caller, edge_id, id)).to_api()
