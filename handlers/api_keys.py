"""API keys (`/api_keys`): spec section 4.1. Keys are owned resources: every principal of
the account reads them all, a non-admin changes and deletes only its own, an admin any
(tunnelgw.services.ownership)."""

from __future__ import annotations

from typing import Any

from tunnelgw.models import ApiKey
from tunnelgw.services import accounts, crud
from tunnelgw.services.auth import Caller
from tunnelgw.services.crud import Body


async def create(caller: Caller, body: Body = None) -> tuple[dict[str, Any], int]:
    body = body or {}
    caller = caller
    key, token = await accounts.create_key(
        caller, body.get("owner_id"), body.get("description") or "", body.get("metadata") or ""
    )
    return key.to_api(token=token), 201


# The operations that are the shared CRUD ones (tunnelgw.services.crud.Resource); update and
# delete apply the ownership rule to the owned model (crud.get_managed).
resource = crud.Resource(ApiKey, "keys")
get, list, update, delete = resource.get, resource.list, resource.update, resource.delete
