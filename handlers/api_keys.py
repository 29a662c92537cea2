"""API keys (`/api_keys`): spec section 4.1."""

from __future__ import annotations

from typing import Any

from models import ApiKey, Principal
from tunnelgw.core.errors import ApiError, Code
from tunnelgw.services import accounts, auth, crud
from tunnelgw.services.auth import Caller
from tunnelgw.services.crud import Body
from tunnelgw.storage import db
from tunnelgw.storage.unit import Unit


async def create(body: Body = None) -> tuple[dict[str, Any], int]:
    body = body or {}
    caller = auth.caller()
    async with db.write() as unit:
        owner = await _owner(unit, caller, body.get("owner_id"))
        key, token = await accounts.issue_key(
            unit,
            owner,
            description=body.get("description") or "",
            meta=body.get("metadata") or "",
        )
    return key.to_api(token=token), 201


async def _owner(unit: Unit, caller: Caller, owner_id: str | None) -> Principal:
    """The key's owner: the caller by default; another principal only for admins."""
    owner_id = owner_id or caller.principal_id
    if owner_id != caller.principal_id and not caller.is_admin:
        raise ApiError(
            Code.PERMISSION_DENIED,
            "Only an admin may create a key for another principal.",
            field="owner_id",
        )
    owner = await unit.get(Principal, owner_id)
    if owner is None or owner.account_id != caller.account_id:
        raise ApiError(
            Code.REFERENCE_NOT_FOUND,
            f"No principal {owner_id!r} in this account.",
            field="owner_id",
        )
    return owner


# The operations that are the shared CRUD ones (tunnelgw.services.crud.Resource).
resource = crud.Resource(ApiKey, "keys")
get, list, update, delete = resource.get, resource.list, resource.update, resource.delete
