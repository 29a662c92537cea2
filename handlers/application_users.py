"""Application users (`/app/users`): spec section 4.11. Read and delete only; deleting a user
deletes that user's sessions in the same unit of work (the user is signed out)."""

from __future__ import annotations

from typing import Any

from models import ApplicationUser
from models.application_session import sign_out
from tunnelgw.services import auth, crud, paging
from tunnelgw.storage import db


async def get(id: str) -> dict[str, Any]:  # noqa: A002 - the spec's parameter name
    return await crud.read_one(ApplicationUser, id)


async def list(
    limit: int = paging.MAX_LIMIT,
    before_id: str | None = None,
    filter: str | None = None,  # noqa: A002 - the spec's parameter name
) -> crud.Listed:
    return await crud.read_page(ApplicationUser, "application_users", limit, before_id, filter)


async def delete(id: str) -> tuple[None, int]:  # noqa: A002
    caller = auth.caller()
    async with db.write() as unit:
        user = await crud.get_owned(unit, ApplicationUser, caller, id)
        await sign_out(unit, caller.account_id, user.id)
        await unit.delete(user)
    return None, 204
