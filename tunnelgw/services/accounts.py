"""Accounts, principals and API keys: the one place tokens are minted.

Used by the API (`POST /api_keys`), the first-start bootstrap and the CLI.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select

from models import Account, ApiKey, Principal
from models.principal import PREFIXES, Kind
from tunnelgw.core import ids
from tunnelgw.services import auth
from tunnelgw.storage.statements import Query
from tunnelgw.storage.unit import Unit


@dataclass(frozen=True)
class Credentials:
    account_id: str
    principal_id: str
    api_key_id: str
    token: str


async def create_account(unit: Unit, name: str = "") -> Account:
    account = Account.new(id=ids.new_id(Account.PREFIX), name=name)
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


async def create_account_with_admin(
    unit: Unit, name: str = "", *, token: str | None = None
) -> Credentials:
    """An account, its admin user and an admin API key."""
    account = await create_account(unit, name)
    admin = await create_principal(unit, account.id, "user", name="admin", is_admin=True)
    key, token = await issue_key(unit, admin, description="admin key", token=token)
    return Credentials(account.id, admin.id, key.id, token)


async def bootstrap(unit: Unit, token: str | None = None) -> Credentials | None:
    """On an empty database, the first account with an admin key; None if one exists."""
    if (await unit.exec(_ANY_ACCOUNT)).first() is not None:
        return None
    return await create_account_with_admin(unit, "default", token=token)


_ANY_ACCOUNT = Query(select(Account.id).limit(1))  # type: ignore[call-overload]
