"""Application users stored: a user deleted with its sessions, in one unit of work (the user
is signed out)."""

from __future__ import annotations

from tunnelgw.models import ApplicationUser
from tunnelgw.models.application_session import sign_out
from tunnelgw.services import crud
from tunnelgw.services.auth import Caller
from tunnelgw.storage import db


async def delete_user(caller: Caller, id_: str) -> None:
    """DELETE /app/users/{id}: the caller's application user and its sessions removed."""
    async with db.write() as unit:
        user = await crud.get_managed(unit, ApplicationUser, caller, id_)
        await sign_out(unit, caller.account_id, user.id)
        await unit.delete(user)
