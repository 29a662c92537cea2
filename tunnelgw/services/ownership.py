"""Owned resources (tunnelgw.models.base.Owned: API keys, tunnel credentials, SSH credentials):
every principal of the account reads them; a non-admin creates, changes and deletes only its own; an
admin any of the account's. So an admin's keys, the account's last one included, go only by an
admin's hand. They go with their owner (a deleted bot user's foreign keys cascade).
"""

from __future__ import annotations

from tunnelgw.core.errors import ApiError, Code
from tunnelgw.models import Principal
from tunnelgw.models.base import Owned
from tunnelgw.services.auth import Caller
from tunnelgw.storage.unit import Unit


async def owner(unit: Unit, caller: Caller, owner_id: str | None) -> Principal:
    """The principal a new row of the caller's is to belong to (body field `owner_id`): the
    caller when unset; another principal only for an admin (ApiError(403)), and only one of
    the caller's account (ApiError(404 ERR_REFERENCE_NOT_FOUND))."""
    owner_id = owner_id or caller.principal_id
    if owner_id != caller.principal_id and not caller.is_admin:
        raise ApiError(
            Code.PERMISSION_DENIED,
            "Only an admin may name another principal as the owner.",
            field="owner_id",
        )
    # Share-locked: a concurrent delete of the principal (which would take the new row with
    # it) waits for this unit, or this unit for it and then finds no principal (404).
    principal = await unit.get(Principal, owner_id, lock="share")
    if principal is None or principal.account_id != caller.account_id:
        raise ApiError(
            Code.REFERENCE_NOT_FOUND,
            f"No principal {owner_id!r} in this account.",
            context={"id": owner_id},
            field="owner_id",
        )
    return principal


def check_may_change(caller: Caller, row: Owned) -> None:
    """ApiError(403 ERR_NOT_OWNER) unless the caller may change or delete `row` (a row of
    its own account): an admin, or the row's owner."""
    if caller.is_admin or row.owner_id == caller.principal_id:
        return
    raise ApiError(
        Code.NOT_OWNER,
        f"{type(row).__name__} {getattr(row, 'id', '')!r} belongs to the principal "
        f"{row.owner_id!r}; only it or an admin of the account may change or delete it.",
        owner_id=row.owner_id,
    )
