"""Bearer-token authentication and the caller of the current request.

Tokens are 256-bit random strings; only their SHA-256 is stored (a token has full entropy,
so a slow password hash would add cost without adding safety). Every request looks the key
up again, with its owner: a deleted key, or one of an inactive bot user, fails on the very next
request, on every worker.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from sqlalchemy import bindparam, select
from sqlalchemy.orm import aliased
from sqlmodel import col

from models import Account, ApiKey, Principal
from models.base import AccountScoped
from tunnelgw.core import ids, timefmt
from tunnelgw.core.errors import ApiError, Code
from tunnelgw.core.platform_errors import masked
from tunnelgw.storage import db
from tunnelgw.storage.statements import Query

TOKEN_PREFIX = "tgw_"  # noqa: S105 - a public prefix, not a secret
MAX_TOKEN_LENGTH = 512


@dataclass(frozen=True, slots=True)
class Caller:
    """Who is calling: the principal behind the API key, and its account."""

    account_id: str
    principal_id: str
    is_admin: bool
    api_key_id: str
    # What `api` IP restrictions the account has (models.ip_restriction.API_*).
    api_restriction: int = 0
    # Whether the account may have fault rules (models.account.Account.fault_rules).
    fault_rules: bool = False


def new_token() -> str:
    return TOKEN_PREFIX + ids.new_secret()


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


async def bearer_info(token: str, row: tuple[str, str] | None = None) -> dict[str, Any]:
    """Connexion's `x-bearerInfoFunc`: the token info of a valid token, else ApiError(401).

    `row` (the pipeline passes it for a GET of one resource): its collection path and id. The
    resource's row is then read in the same statement as the key (one database round trip
    for the request, not two) and carried to the handler's read of it (`take_carried`): the
    key is still checked on every request, in the very statement that reads the data."""
    if not token or len(token) > MAX_TOKEN_LENGTH or not token.isprintable():
        context = {"reason": "malformed", "credential": masked(token)}
        raise ApiError(Code.INVALID_CREDENTIALS, context=context)
    digest = hash_token(token)
    model = _MODELS_AT.get(row[0]) if row is not None else None
    target = (model, row[1]) if model is not None and row is not None else None
    async with db.read() as unit:
        if target is None:
            found = (await unit.exec(_BY_TOKEN_HASH, {"digest": digest})).first()
        else:
            params = {"digest": digest, "row_id": target[1]}
            found = (await unit.exec(_with_row(target[0]), params)).first()
    if found is None or not hmac.compare_digest(found[0], digest):
        raise ApiError(Code.INVALID_CREDENTIALS, context={"credential": masked(token)})
    if target is not None:  # the row's record: all NULLs from the outer join when there is none
        found, carried = found[:9], found[9]
        _carried.set((target[0], target[1], carried if carried.id is not None else None))
    _, key_id, principal_id, account_id, is_admin, active, clock_offset, restriction, faults = found
    if not active:
        raise ApiError(
            Code.PRINCIPAL_INACTIVE,
            f"The API key {key_id!r} belongs to the bot user {principal_id!r}, which is "
            "inactive: its keys authenticate again once an admin makes it active "
            "(PATCH /bot_users/{id} with active true).",
            principal_id=principal_id,
        )
    # The account's simulated clock (admin API) holds for the rest of the request.
    timefmt.clock_offset.set(timedelta(seconds=clock_offset) if clock_offset else None)
    caller = Caller(account_id, principal_id, is_admin, key_id, restriction, bool(faults))
    return {"sub": principal_id, "caller": caller}


# The credential's key and its owner under aliases: a carried row may be an API key or a
# principal (a bot user) too.
_KEY = aliased(ApiKey, name="bearer_key")
_OWNER = aliased(Principal, name="owner")
_CREDENTIAL = (
    select(
        col(_KEY.token_hash),
        col(_KEY.id),
        col(_OWNER.id),
        col(_OWNER.account_id),
        col(_OWNER.is_admin),
        col(_OWNER.active),
        col(Account.clock_offset_seconds),
        col(Account.api_restriction),
        col(Account.fault_rules),
    )
    .select_from(_KEY)
    .join(_OWNER, col(_OWNER.id) == col(_KEY.owner_id))
    .join(Account, col(Account.id) == col(_OWNER.account_id))
    .where(col(_KEY.token_hash) == bindparam("digest"))
)
_BY_TOKEN_HASH = Query(_CREDENTIAL)


def _collections() -> dict[str, type[AccountScoped]]:
    """The model of each collection path whose items a GET reads by `id` alone (tables that
    share a path, such as the edge kinds, are left out: their reads go their own way)."""
    found: dict[str, list[type[AccountScoped]]] = {}
    stack: list[type[AccountScoped]] = [AccountScoped]
    while stack:
        cls = stack.pop()
        stack.extend(cls.__subclasses__())
        if "__table__" in vars(cls) and "PATH" in vars(cls):
            found.setdefault(cls.PATH, []).append(cls)
    return {path: models[0] for path, models in found.items() if len(models) == 1}


_MODELS_AT = _collections()


@functools.cache
def _with_row(model: type[AccountScoped]) -> Query:
    """The credential check and the row `row_id` of `model` (NULLs when there is none)."""
    return Query(
        _CREDENTIAL.add_columns(model).outerjoin(model, col(model.id) == bindparam("row_id"))
    )


# A row the credential check read in its own statement (`bearer_info` with `row`): (model, id,
# the record or None when there is no such row). The request's read of that row through
# `crud.get_owned` takes it instead of reading it again; each request's task sets it anew.
_carried: ContextVar[tuple[Any, str, Any] | None] = ContextVar("tunnelgw_carried", default=None)
NOT_CARRIED = object()


def take_carried(model: type[Any], id_: str) -> Any:
    """The row `id_` of `model` that the credential check read along (None when there is no
    such row), once; `NOT_CARRIED` when it did not read that row."""
    carried = _carried.get()
    if carried is None or carried[0] is not model or carried[1] != id_:
        return NOT_CARRIED
    _carried.set(None)
    return carried[2]


# The authenticated caller of the current request (set by tunnelgw.http's security step).
_caller: ContextVar[Caller | None] = ContextVar("tunnelgw_caller", default=None)


def activate(found: Caller) -> None:
    """Make `found` the caller of the current request (its task and the tasks it starts)."""
    _caller.set(found)


def caller() -> Caller:
    """The authenticated caller of the current request."""
    found = _caller.get()
    if found is None:  # pragma: no cover - security runs before handlers
        raise ApiError(Code.AUTHENTICATION_REQUIRED)
    return found
