"""Bearer-token authentication and the caller of the current request.

Tokens are 256-bit random strings; only their SHA-256 is stored (a token has full entropy,
so a slow password hash would add cost without adding safety). Every request looks the key
up again: a deleted key fails on the very next request, on every worker.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from sqlalchemy import bindparam, select
from sqlmodel import col

from models import Account, ApiKey, Principal
from tunnelgw import db, ids, pipeline, timefmt
from tunnelgw.db import Query
from tunnelgw.errors import ApiError, Code

TOKEN_PREFIX = "tgw_"  # noqa: S105 - a public prefix, not a secret
MAX_TOKEN_LENGTH = 512


@dataclass(frozen=True, slots=True)
class Caller:
    """Who is calling: the principal behind the API key, and its account."""

    account_id: str
    principal_id: str
    is_admin: bool
    api_key_id: str


def new_token() -> str:
    return TOKEN_PREFIX + ids.new_secret()


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


async def bearer_info(token: str) -> dict[str, Any]:
    """Connexion's `x-bearerInfoFunc`: the token info of a valid token, else ApiError(401)."""
    if not token or len(token) > MAX_TOKEN_LENGTH or not token.isprintable():
        raise ApiError(Code.INVALID_CREDENTIALS)
    digest = hash_token(token)
    async with db.read() as unit:
        row = (await unit.exec(_BY_TOKEN_HASH, {"digest": digest})).first()
    if row is None or not hmac.compare_digest(row[0], digest):
        raise ApiError(Code.INVALID_CREDENTIALS)
    _, key_id, principal_id, account_id, is_admin, clock_offset = row
    # The account's simulated clock (admin API) holds for the rest of the request.
    timefmt.clock_offset.set(timedelta(seconds=clock_offset) if clock_offset else None)
    return {"sub": principal_id, "caller": Caller(account_id, principal_id, is_admin, key_id)}


_BY_TOKEN_HASH = Query(
    select(
        col(ApiKey.token_hash),
        col(ApiKey.id),
        col(Principal.id),
        col(Principal.account_id),
        col(Principal.is_admin),
        col(Account.clock_offset_seconds),
    )
    .join(Principal, col(Principal.id) == col(ApiKey.owner_id))
    .join(Account, col(Account.id) == col(Principal.account_id))
    .where(col(ApiKey.token_hash) == bindparam("digest"))
)


def caller() -> Caller:
    """The authenticated caller of the current request."""
    info = pipeline.token_info.get() or {}
    found = info.get("caller")
    if not isinstance(found, Caller):  # pragma: no cover - security runs before handlers
        raise ApiError(Code.AUTHENTICATION_REQUIRED)
    return found
