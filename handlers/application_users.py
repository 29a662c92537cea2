"""Application users (`/app/users`): spec section 4.11. Read and delete only; deleting a user
deletes that user's sessions in the same unit of work (the user is signed out)."""

from __future__ import annotations

from tunnelgw.models import ApplicationUser
from tunnelgw.models.application_session import sign_out
from tunnelgw.services import auth, crud
from tunnelgw.storage import db


async def delete(id: str) -> tuple[None, int]:  # noqa: A002
    caller = auth.caller()
    async with db.write() as unit:
        user = await crud.get_managed(unit, ApplicationUser, caller, id)
        await sign_out(unit, caller.account_id, user.id)
        await unit.delete(user)
    return None, 204


# The operations that are the shared CRUD ones (tunnelgw.services.crud.Resource).
resource = crud.Resource(ApplicationUser, "application_users")
get, list = resource.get, resource.list
