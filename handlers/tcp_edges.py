"""TCP edges (`/edges/tcp`): read-only here (rows come from fixtures); the backend module is
shown, the platform's other TCP edge modules are not modelled (always null)."""

from __future__ import annotations

from typing import Any

from tunnelgw.services import crud, edges, paging
from tunnelgw.services.auth import Caller


async def get(caller: Caller, id: str) -> dict[str, Any]:  # noqa: A002 - the spec's parameter name
    return (await edges.read(caller, "tcp", id)).to_api()


async def list(
    caller: Caller,
    limit: int = paging.MAX_LIMIT,
    before_id: str | None = None,
    filter: str | None = None,  # noqa: A002 - the spec's parameter name
) -> crud.Listed:
    return await edges.read_page(caller, "tcp", limit, before_id, filter)
