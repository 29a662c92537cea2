"""Per-account quotas (settings `quota_default`, `quotas`): `add(unit, row)` inserts a counted
row unless its account holds its kind's quota already (409 `ERR_QUOTA_EXCEEDED`). The check
and the insert commit together, so concurrent creates cannot pass the quota.

Counting an account's rows costs time linear in them (~0.1 us a row on SQLite: 1 ms at 10,000), so
the check reads a bound instead (tunnelgw.models.quota_usage): at least the account's rows of the
kind, set from an exact count and raised by one with each row admitted. Only a create the bound
would take past the quota counts, and the count replaces the bound. Rows deleted leave the bound
high, which costs a count later, never a wrong answer; a row inserted without `admit` (fixture rows,
issued certificates, keys made by the command line) must `forget` the bound, or the quota could be
passed by that many rows."""

from __future__ import annotations

import functools
from typing import Any

from sqlalchemy import bindparam, delete, func, insert, literal, select, update
from sqlmodel import col

from tunnelgw.core import settings
from tunnelgw.core.errors import ApiError, Code
from tunnelgw.models import QUOTA_KINDS, Account, QuotaUsage
from tunnelgw.models.base import AccountScoped
from tunnelgw.storage import records
from tunnelgw.storage.statements import Query
from tunnelgw.storage.unit import Unit

# Creates of one account take turns from their count to their commit: on PostgreSQL they lock
# the account row, `FOR NO KEY UPDATE` so that inserts merely referencing the account (which
# take `FOR KEY SHARE` on it) do not wait; SQLite's write units are exclusive anyway.
_LOCK_ACCOUNT = Query(
    select(col(Account.id))
    .where(col(Account.id) == bindparam("account"))
    .with_for_update(key_share=True)  # FOR NO KEY UPDATE
)


async def take_turn(unit: Unit, account_id: str) -> None:
    """Hold the account's lock to the end of the write unit `unit` (PostgreSQL; SQLite's write
    units are exclusive anyway): the account's creates, and other checks of its rows as a
    whole (a cloud endpoint's URL), take turns."""
    if unit.dialect == "postgresql":
        await unit.exec(_LOCK_ACCOUNT, {"account": account_id})


@functools.cache
def _count(model: type[AccountScoped]) -> Query:
    """How many rows of `model` the account has, counted up to `cap` (the cost of a count
    stays bounded by the quota, on the account's index)."""
    capped = (
        select(literal(1))
        .select_from(model)
        .where(col(model.account_id) == bindparam("account"))
        .limit(bindparam("cap"))
        .subquery()
    )
    return Query(select(func.count()).select_from(capped))


def check_kinds(configured: settings.Settings) -> None:
    """Raise pydantic's ValidationError, as for any setting the server refuses, when the
    `quotas` setting names a kind no model's rows are counted as (QUOTA_KINDS: the settings
    know the syntax, the models the kinds)."""
    from pydantic import ValidationError

    for kind in settings.parse_quotas(configured.quotas):
        if kind not in QUOTA_KINDS:
            known = ", ".join(sorted(QUOTA_KINDS))
            problem = ValueError(f"{kind!r} is not a kind of resource with a quota ({known})")
            raise ValidationError.from_exception_data(
                "Settings",
                [
                    {
                        "type": "value_error",
                        "loc": ("quotas",),
                        "input": configured.quotas,
                        "ctx": {"error": problem},
                    }
                ],
            )


def kind_of(model: type[AccountScoped]) -> str:
    """The kind name of `model` in the quota settings (its table name)."""
    name: str = model.__tablename__  # type: ignore[assignment]
    return name


_BUMP = Query(
    update(QuotaUsage)
    .where(col(QuotaUsage.account_id) == bindparam("account"))
    .where(col(QuotaUsage.kind) == bindparam("kind"))
    .where(col(QuotaUsage.bound) < bindparam("quota"))
    .values(bound=col(QuotaUsage.bound) + 1)
    .returning(col(QuotaUsage.bound))
)
_SET = Query(
    update(QuotaUsage)
    .where(col(QuotaUsage.account_id) == bindparam("account"))
    .where(col(QuotaUsage.kind) == bindparam("kind"))
    .values(bound=bindparam("bound"))
    .returning(col(QuotaUsage.bound))
)
_NEW = Query(
    insert(QuotaUsage).values(
        account_id=bindparam("account"), kind=bindparam("kind"), bound=bindparam("bound")
    )
)


async def admit(
    unit: Unit,
    model: type[AccountScoped],
    account_id: str,
    *,
    limit: int | None = None,
) -> None:
    """Let one more row of `model` into the account, or raise ApiError(409
    ERR_QUOTA_EXCEEDED) when it holds `limit` (default: the settings' quota of its kind)
    already. Holds the account's lock to the end of the write unit `unit`.

    One statement while the bound is below the quota (raised by one where it is); else the
    rows are counted and the count, plus the row admitted, becomes the bound."""
    kind = kind_of(model)
    quota = settings.current().quota(kind) if limit is None else limit
    await take_turn(unit, account_id)
    params: dict[str, Any] = {"account": account_id, "kind": kind, "quota": quota}
    if (await unit.exec(_BUMP, params)).first() is not None:
        return
    held = (await unit.exec(_count(model), {"account": account_id, "cap": quota})).one()
    if held >= quota:
        where = (
            " (the server's quota: TUNNELGW_QUOTA_DEFAULT, TUNNELGW_QUOTAS)"
            if limit is None
            else ""
        )
        raise ApiError(
            Code.QUOTA_EXCEEDED,
            f"The account holds {quota} {kind} rows, the most it may{where}; delete some first.",
            kind=kind,
            quota=str(quota),
        )
    params["bound"] = held + 1
    if (await unit.exec(_SET, params)).first() is None:
        await unit.exec(_NEW, params)


async def add(unit: Unit, row: Any) -> None:
    """Insert `row` (an account-scoped row) at the write unit's next flush, once `admit` lets
    it into its account: how create operations insert the rows the quotas count."""
    model = records.model_of(row)
    assert issubclass(model, AccountScoped)  # counted rows belong to an account
    await admit(unit, model, row.account_id)
    unit.add(row)


_FORGET = Query(
    delete(QuotaUsage)
    .where(col(QuotaUsage.account_id) == bindparam("account"))
    .where(col(QuotaUsage.kind) == bindparam("kind"))
)


async def forget(unit: Unit, account_id: str, model: type[AccountScoped]) -> None:
    """Drop the account's bound of `model`'s kind (its next create counts): for rows inserted
    without `admit`."""
    await unit.exec(_FORGET, {"account": account_id, "kind": kind_of(model)})


_FORGET_ALL = Query(delete(QuotaUsage).where(col(QuotaUsage.account_id) == bindparam("account")))


async def forget_all(unit: Unit, account_id: str) -> None:
    """Drop every bound of the account (its next create of each kind counts): for rows of
    several kinds inserted without `admit` (a fixture's)."""
    await unit.exec(_FORGET_ALL, {"account": account_id})
