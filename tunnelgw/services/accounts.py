"""Accounts, principals and API keys: the one place tokens are minted.

Used by the API (`POST /api_keys`), the first-start bootstrap, the CLI and the operator's
account operations (`/_admin/accounts`: the operator credential, listing and deleting
accounts with everything in them).
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Table, delete, select
from sqlmodel import SQLModel, col

from tunnelgw import models
from tunnelgw.core import ids, settings
from tunnelgw.core.errors import ApiError, Code
from tunnelgw.models import Account, ApiKey, Principal
from tunnelgw.models.principal import PREFIXES, Kind
from tunnelgw.services import auth, ownership, quotas
from tunnelgw.storage import db
from tunnelgw.storage.statements import Query
from tunnelgw.storage.unit import Unit


@dataclass(frozen=True)
class Credentials:
    account_id: str
    principal_id: str
    api_key_id: str
    token: str


async def create_account(unit: Unit, name: str = "", *, account_id: str | None = None) -> Account:
    account = Account.new(id=account_id or ids.new_id(Account.PREFIX), name=name)
    unit.add(account)
    await unit.flush()
    return account


async def create_principal(
    unit: Unit, account_id: str, kind: Kind, *, name: str = "", is_admin: bool = False
) -> Principal:
    principal = Principal.new(
        id=ids.new_id(PREFIXES[kind]),
        account_id=account_id,
        kind=kind,
        name=name,
        is_admin=is_admin,
    )
    unit.add(principal)
    await unit.flush()
    return principal


async def issue_key(
    unit: Unit,
    owner: Principal,
    *,
    description: str = "",
    meta: str = "",
    token: str | None = None,
) -> tuple[ApiKey, str]:
    """A new API key for `owner` and its token (shown once; only its hash is stored)."""
    token = token or auth.new_token()
    key = ApiKey.new(
        id=ids.new_id(ApiKey.PREFIX),
        account_id=owner.account_id,
        owner_id=owner.id,
        description=description,
        meta=meta,
        token_hash=auth.hash_token(token),
    )
    unit.add(key)
    await unit.flush()
    return key, token


async def create_key(
    caller: auth.Caller, owner_id: str | None, description: str, meta: str
) -> tuple[ApiKey, str]:
    """CREATE /api_keys: a key of the principal `owner_id` (the caller when unset:
    tunnelgw.services.ownership.owner), admitted by its quota; the row and its token."""
    async with db.write() as unit:
        owner = await ownership.owner(unit, caller, owner_id)
        await quotas.admit(unit, ApiKey, caller.account_id)
        return await issue_key(unit, owner, description=description, meta=meta)


async def create_account_with_admin(
    unit: Unit, name: str = "", *, token: str | None = None, account_id: str | None = None
) -> Credentials:
    """An account (with the id `account_id` when given), its admin user and an admin API
    key."""
    account = await create_account(unit, name, account_id=account_id)
    admin = await create_principal(unit, account.id, "user", name="admin", is_admin=True)
    key, token = await issue_key(unit, admin, description="admin key", token=token)
    return Credentials(account.id, admin.id, key.id, token)


async def bootstrap(unit: Unit, token: str | None = None) -> Credentials | None:
    """On an empty database, the first account with an admin key; None if one exists."""
    if (await unit.exec(_ANY_ACCOUNT)).first() is not None:
        return None
    return await create_account_with_admin(unit, "default", token=token)


_ANY_ACCOUNT = Query(select(Account.id).limit(1))  # type: ignore[call-overload]


# --- the operator's credential ----------------------------------------------------------

OPERATOR = "operator"  # the `sub` of the operator's token info


async def operator_info(token: str, _row: tuple[str, str] | None = None) -> dict[str, Any]:
    """The `x-bearerInfoFunc` of the account operations: the operator token
    (TUNNELGW_OPERATOR_TOKEN) or ApiError. Compared as SHA-256 digests in constant time; no
    account's API key is ever the operator token (an account's key is 401 here like any
    other wrong token)."""
    configured = settings.current().operator_token
    if configured is None:
        raise ApiError(
            Code.PERMISSION_DENIED,
            "This server has no operator token: the account operations need "
            "TUNNELGW_OPERATOR_TOKEN set when it starts.",
        )
    sent = hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest()
    wanted = hashlib.sha256(configured.get_secret_value().encode("utf-8")).digest()
    if not hmac.compare_digest(sent, wanted):
        raise ApiError(
            Code.INVALID_CREDENTIALS,
            "The bearer token is not the operator token (TUNNELGW_OPERATOR_TOKEN); an "
            "account's API key cannot manage accounts.",
        )
    return {"sub": OPERATOR, "caller": None}


async def operator_token_is_a_key(unit: Unit, token: str) -> bool:
    """Whether some account's API key has `token` (the server refuses to start then)."""
    digest = auth.hash_token(token)
    found = await unit.exec(select(col(ApiKey.id)).where(col(ApiKey.token_hash) == digest).limit(1))
    return found.first() is not None


# --- listing and deleting accounts -------------------------------------------------------


async def page(limit: int, before_id: str | None) -> tuple[list[Account], bool]:
    """One page of the accounts, newest first (keyset on the id, as every list), and whether
    more follow."""
    stmt = select(Account).order_by(col(Account.id).desc()).limit(limit + 1)
    if before_id is not None:
        stmt = stmt.where(col(Account.id) < before_id)
    async with db.read() as unit:
        rows: list[Account] = (await unit.exec(stmt)).all()
    return rows[:limit], len(rows) > limit


def account_tables() -> list[Table]:
    """Every table whose rows belong to an account (an `account_id` column), children
    first: derived from the models, so a new table is covered without a list to keep."""
    models.load_all()  # every table on the metadata

    return [table for table in reversed(SQLModel.metadata.sorted_tables) if "account_id" in table.c]


async def delete_account(unit: Unit, account_id: str) -> dict[str, int] | None:
    """Delete the account and every row of it in the write unit `unit` (one transaction);
    rows deleted per table, or None when there is no such account."""
    account = await unit.get(Account, account_id, lock=True)
    if account is None:
        return None
    counts: dict[str, int] = {}
    for table in account_tables():
        result = await unit.exec(delete(table).where(table.c.account_id == account_id))
        if result.rowcount:
            counts[str(table.name)] = result.rowcount
    await unit.exec(delete(Account).where(col(Account.id) == account_id))
    counts["account"] = 1
    return counts


async def open_account(name: str) -> tuple[Account, Credentials]:
    """POST /_admin/accounts: a new account with its admin and key
    (`create_account_with_admin`), in a unit of its own; the account and the credentials."""
    async with db.write() as unit:
        created = await create_account_with_admin(unit, name)
        account = await unit.get(Account, created.account_id)
    assert account is not None  # just made
    return account, created


async def drop_account(account_id: str) -> dict[str, int] | None:
    """`delete_account` in a unit of its own."""
    async with db.write() as unit:
        return await delete_account(unit, account_id)


# --- the account's clock ------------------------------------------------------------------


async def clock_offset(account_id: str) -> int:
    """How many seconds the account's clock runs ahead of the real time."""
    async with db.read() as unit:
        account = await unit.get(Account, account_id)
    assert account is not None  # the caller's key names it
    return account.clock_offset_seconds


async def move_clock(account_id: str, to: Callable[[int], int]) -> int:
    """Set the account's clock offset to `to(offset)` (its current offset; ApiError raised
    by `to` changes nothing), the account locked meanwhile; the new offset."""
    async with db.write() as unit:
        account = await unit.get(Account, account_id, lock="no key")
        assert account is not None  # the caller's key names it
        account.clock_offset_seconds = to(account.clock_offset_seconds)
    return account.clock_offset_seconds
