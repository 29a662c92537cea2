"""Accounts, principals and API keys: the one place tokens are minted.

Used by the API (`POST /api_keys`), the first-start bootstrap and the CLI.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlmodel import select
from sqlmodel.ext.asyncio.session import AsyncSession

from models import Account, ApiKey, Principal
from models.principal import PREFIXES, Kind
from tunnelgw import auth, ids


@dataclass(frozen=True)
class Credentials:
    account_id: str
    principal_id: str
    api_key_id: str
    token: str


async def create_account(session: AsyncSession, name: str = "") -> Account:
    account = Account(id=ids.new_id(Account.PREFIX), name=name)
    session.add(account)
    await session.flush()
    return account


async def create_principal(
    session: AsyncSession, account_id: str, kind: Kind, *, name: str = "", is_admin: bool = False
) -> Principal:
    principal = Principal(
        id=ids.new_id(PREFIXES[kind]),
        account_id=account_id,
        kind=kind,
        name=name,
        is_admin=is_admin,
    )
    session.add(principal)
    await session.flush()
    return principal


async def issue_key(
    session: AsyncSession,
    owner: Principal,
    *,
    description: str = "",
    meta: str = "",
    token: str | None = None,
) -> tuple[ApiKey, str]:
    """A new API key for `owner` and its token (shown once; only its hash is stored)."""
    token = token or auth.new_token()
    key = ApiKey(
        id=ids.new_id(ApiKey.PREFIX),
        account_id=owner.account_id,
        owner_id=owner.id,
        description=description,
        meta=meta,
        token_hash=auth.hash_token(token),
    )
    session.add(key)
    await session.flush()
    return key, token


async def create_account_with_admin(
    session: AsyncSession, name: str = "", *, token: str | None = None
) -> Credentials:
    """An account, its admin user and an admin API key."""
    account = await create_account(session, name)
    admin = await create_principal(session, account.id, "user", name="admin", is_admin=True)
    key, token = await issue_key(session, admin, description="admin key", token=token)
    return Credentials(account.id, admin.id, key.id, token)


async def bootstrap(session: AsyncSession, token: str | None = None) -> Credentials | None:
    """On an empty database, the first account with an admin key; None if one exists."""
    if (await session.exec(select(Account.id).limit(1))).first() is not None:
        return None
    return await create_account_with_admin(session, "default", token=token)
