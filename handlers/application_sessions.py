"""Application sessions (`/app/sessions`): spec section 4.10. Read and delete only; deleting
a session signs its user out of that endpoint."""

from __future__ import annotations

from typing import Any

from models import ApplicationSession
from tunnelgw import resources


async def get(id: str) -> dict[str, Any]:  # noqa: A002 - the spec's parameter name
    return await resources.read_one(ApplicationSession, id)


async def list(
    limit: int = resources.MAX_LIMIT,
    before_id: str | None = None,
    beforeId: str | None = None,  # noqa: N803
    filter: str | None = None,  # noqa: A002 - the spec's parameter name
) -> resources.Listed:
    return await resources.read_page(
        ApplicationSession, "application_sessions", limit, before_id, beforeId, filter
    )


async def delete(id: str) -> tuple[None, int]:  # noqa: A002
    return await resources.delete_one(ApplicationSession, id)
