"""Application users (`/app/users`): spec section 4.11. Read and delete only; deleting a user
deletes that user's sessions in the same unit of work (the user is signed out)."""

from __future__ import annotations

from tunnelgw.models import ApplicationUser
from tunnelgw.services import applications, crud
from tunnelgw.services.auth import Caller


async def delete(caller: Caller, id: str) -> tuple[None, int]:  # noqa: A002
    await applications.delete_user(caller, id)
    return None, 204


# The operations that are the shared CRUD ones (tunnelgw.services.crud.Resource).
resource = crud.Resource(ApplicationUser, "application_users")
get, list = resource.get, resource.list
