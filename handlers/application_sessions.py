"""Application sessions (`/app/sessions`): spec section 4.10. Read and delete only; deleting
a session signs its user out of that endpoint."""

from __future__ import annotations

from typing import Any

from models import ApplicationSession
from tunnelgw.services import crud, paging


async def get(id: str) -> dict[str, Any]:  # noqa: A002 - the spec's parameter name
    return await crud.read_one(ApplicationSession, id)


async def list(
    limit: int = paging.MAX_LIMIT,
    before_id: str | None = None,
    filter: str | None = None,  # noqa: A002 - the spec's parameter name
) -> crud.Listed:
    return await crud.read_page(
        ApplicationSession, "application_sessions", limit, before_id, filter
    )


async def delete(id: str) -> tuple[None, int]:  # noqa: A002
    return await crud.delete_one(ApplicationSession, id)
