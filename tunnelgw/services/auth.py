"""Bearer-token authentication: the caller of a request.

Tokens are 256-bit random strings; only their SHA-256 is stored (a token has full entropy,
so a slow password hash would add cost without adding safety). A bearer token is an API key's
(full access) or an access token's (`ACCESS_TOKEN_PREFIX`; only its scopes,
tunnelgw.core.scopes). Every request looks the credential up again, with its owner: a deleted
key or token, a revoked or expired token, or one of an inactive bot user, fails on the very
next request, on every worker.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple

from sqlalchemy import bindparam, select
from sqlalchemy.orm import aliased
from sqlmodel import SQLModel, col

from tunnelgw.core import ids, timefmt
from tunnelgw.core.errors import ApiError, Code
from tunnelgw.core.platform_errors import masked
from tunnelgw.models import AccessToken, Account, ApiKey, Principal
from tunnelgw.models.base import AccountScoped
from tunnelgw.storage import db, records
from tunnelgw.storage.statements import Query

TOKEN_PREFIX = "tgw_"  # noqa: S105 - a public prefix, not a secret
# An access token's (the platform's are `<platform>_pat_...`); an API key's never starts so,
# its random part being base62 (no `_`).
ACCESS_TOKEN_PREFIX = "tgw_pat_"  # noqa: S105 - a public prefix, not a secret
MAX_TOKEN_LENGTH = 512


NOT_CARRIED = object()


class Carried:
    """A row the credential check read in its own statement (`bearer_info` with `row`): its
    model, id and record (None when there is no such row). The request's read of that row
    through `crud.get_owned` takes it (`take`) instead of reading it again."""

    __slots__ = ("id", "model", "row")

    def __init__(self, model: type[Any], id_: str, row: Any) -> None:
        self.model: type[Any] | None = model
        self.id = id_
        self.row = row

    def take(self, model: type[Any], id_: str) -> Any:
        """The row `id_` of `model` (None when there is no such row), once; `NOT_CARRIED`
        when it is another row, or was taken."""
        if self.model is not model or self.id != id_:
            return NOT_CARRIED
        self.model = None
        return self.row


# `Caller.event_routes` of a caller not made by the credential check (never stored text).
UNREAD = ""


class Caller(NamedTuple):
    """Who is calling: the principal behind the API key or access token, and its account.

    A named tuple, for the price of making one on every request: 0.5 us, where a frozen
    dataclass's `__init__` (a `object.__setattr__` per field) took 2.4 (bench/README.md,
    issue 31, tenth round)."""

    account_id: str
    principal_id: str
    is_admin: bool
    # The API key's id; None when the credential is an access token.
    api_key_id: str | None
    # What `api` IP restrictions the account has (tunnelgw.models.ip_restriction.API_*).
    api_restriction: int = 0
    # Whether the account may have fault rules (tunnelgw.models.account.Account.fault_rules).
    fault_rules: bool = False
    # The account's event routes as the credential check read them (`Account.event_routes`;
    # None: it has none, so its changes fire no event and are not rendered), or UNREAD.
    event_routes: str | None = UNREAD
    # The access token's id and scopes; None for an API key (every scope).
    access_token_id: str | None = None
    scopes: frozenset[str] | None = None
    # The row the credential check read along (`bearer_info` with `row`), or None.
    carried: Carried | None = None

    def may(self, scope: str) -> bool:
        """Whether the credential holds `scope` (an API key holds every scope)."""
        return self.scopes is None or scope in self.scopes


def new_access_token() -> str:
    return ACCESS_TOKEN_PREFIX + ids.new_secret()


def new_token() -> str:
    return TOKEN_PREFIX + ids.new_secret()


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


async def bearer_info(token: str, row: tuple[str, str] | None = None) -> dict[str, Any]:
    """Connexion's `x-bearerInfoFunc`: the token info of a valid token, else ApiError(401).

    `row` (the pipeline passes it for a GET of one resource): its collection path and id. The
    resource's row is then read in the same statement as the key (one database round trip
    for the request, not two) and carried by the caller to the handler's read of it
    (`Caller.carried`): the
    key is still checked on every request, in the very statement that reads the data."""
    if not token or len(token) > MAX_TOKEN_LENGTH or not token.isprintable():
        context = {"reason": "malformed", "credential": masked(token)}
        raise ApiError(Code.INVALID_CREDENTIALS, context=context)
    digest = hash_token(token)
    carried = None
    kind = _ACCESS if token.startswith(ACCESS_TOKEN_PREFIX) else _KEYS
    model = _model_at(row[0]) if row is not None else None
    target = (model, row[1]) if model is not None and row is not None else None
    async with db.read() as unit:
        if target is None:
            found = (await unit.exec(kind.by_hash, {"digest": digest})).first()
        else:
            params = {"digest": digest, "row_id": target[1]}
            found = (await unit.exec(_with_row(kind, target[0]), params)).first()
    if found is None or not hmac.compare_digest(found[0], digest):
        raise ApiError(Code.INVALID_CREDENTIALS, context={"credential": masked(token)})
    if target is not None:  # the row's record: all NULLs from the outer join when there is none
        found, record = found[: kind.width], found[kind.width]
        carried = Carried(target[0], target[1], record if record.id is not None else None)
    _, key_id, principal_id, account_id, is_admin, active, clock_offset, restriction, faults = (
        found[:9]
    )
    routes = found[9]
    what = "access token" if kind is _ACCESS else "API key"
    if not active:
        raise ApiError(
            Code.PRINCIPAL_INACTIVE,
            f"The {what} {key_id!r} belongs to the bot user {principal_id!r}, which is "
            "inactive: its keys and tokens authenticate again once an admin makes it active "
            "(PATCH /bot_users/{id} with active true).",
            principal_id=principal_id,
        )
    # The account's simulated clock (admin API) holds for the rest of the request.
    timefmt.clock_offset.set(timedelta(seconds=clock_offset) if clock_offset else None)
    if kind is _KEYS:
        caller = Caller(
            account_id,
            principal_id,
            is_admin,
            key_id,
            restriction,
            bool(faults),
            routes,
            carried=carried,
        )
        return {"sub": principal_id, "caller": caller}
    scopes, expires_at, revoked_at = found[10:13]
    problem = unusable(key_id, expires_at, revoked_at)
    if problem is not None:
        raise ApiError(
            Code.INVALID_CREDENTIALS,
            problem,
            access_token_id=key_id,
            context={"credential": masked(token)},
        )
    caller = Caller(
        account_id,
        principal_id,
        is_admin,
        None,
        restriction,
        bool(faults),
        routes,
        access_token_id=key_id,
        scopes=frozenset(scopes or ()),
        carried=carried,
    )
    return {"sub": principal_id, "caller": caller}


def unusable(token_id: str, expires_at: Any, revoked_at: Any) -> str | None:
    """Why an access token no longer authenticates: revoked, or expired on the account's
    clock (set for the request already: `timefmt.now()`); None while it does."""
    if revoked_at is not None:
        when = timefmt.rfc3339(_aware(revoked_at))
        return f"The access token {token_id!r} was revoked at {when}; create a new one."
    if expires_at is not None and _aware(expires_at) <= timefmt.now():
        when = timefmt.rfc3339(_aware(expires_at))
        return f"The access token {token_id!r} expired at {when}; create a new one."
    return None


def _aware(value: Any) -> datetime:
    """A stored timestamp as an aware datetime (SQLite keeps no zone; text is parsed)."""
    if isinstance(value, str):
        return records.stored_time(value)
    moment: datetime = value
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


# The credential's key or token and its owner under aliases: a carried row may be an API key,
# an access token or a principal (a bot user) too.
_OWNER = aliased(Principal, name="owner")


@dataclass(frozen=True, eq=False)
class _Kind:
    """One kind of bearer credential: its statement (token hash, id, then the owner's and
    account's columns, then the kind's own) and the number of columns it selects."""

    statement: Any
    width: int
    by_hash: Query


def _credential(model: type[ApiKey] | type[AccessToken], *extra: str) -> _Kind:
    key = aliased(model, name="bearer_key")
    columns = [
        col(key.token_hash),
        col(key.id),
        col(_OWNER.id),
        col(_OWNER.account_id),
        col(_OWNER.is_admin),
        col(_OWNER.active),
        col(Account.clock_offset_seconds),
        col(Account.api_restriction),
        col(Account.fault_rules),
        col(Account.event_routes),
        *(col(getattr(key, name)) for name in extra),
    ]
    statement = (
        select(*columns)
        .select_from(key)
        .join(_OWNER, col(_OWNER.id) == col(key.owner_id))
        .join(Account, col(Account.id) == col(_OWNER.account_id))
        .where(col(key.token_hash) == bindparam("digest"))
    )
    return _Kind(statement, len(columns), Query(statement))


_KEYS = _credential(ApiKey)
_ACCESS = _credential(AccessToken, "scopes", "expires_at", "revoked_at")


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


# `_collections()` and how many tables were loaded when it was made: a table's module is
# imported when first named (tunnelgw.models), so the index is made again when there are more.
_models_at: tuple[int, dict[str, type[AccountScoped]]] = (-1, {})


def _model_at(path: str) -> type[AccountScoped] | None:
    """The model whose rows a GET of `<path>/{id}` reads, among the tables loaded (the
    handler of such a GET has imported its model when the check runs); None: read apart."""
    global _models_at
    loaded, found = _models_at
    if loaded != len(SQLModel.metadata.tables):
        _models_at = loaded, found = len(SQLModel.metadata.tables), _collections()
    return found.get(path)


@functools.cache
def _with_row(kind: _Kind, model: type[AccountScoped]) -> Query:
    """The credential check and the row `row_id` of `model` (NULLs when there is none)."""
    return Query(
        kind.statement.add_columns(model).outerjoin(model, col(model.id) == bindparam("row_id"))
    )
