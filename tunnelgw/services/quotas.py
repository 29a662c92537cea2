"""Per-account quotas (settings `quota_default`, `quotas`): `add(unit, row)` inserts a counted
row unless its account holds its kind's quota already (409 `ERR_QUOTA_EXCEEDED`). The check
and the insert commit together, so concurrent creates cannot pass the quota.

Counting an account's rows costs time linear in them (~0.1 us a row on SQLite: 1 ms at 10,000), so
the check reads a bound instead (tunnelgw.models.quota_usage): at least the account's rows of the
kind, set from an exact count and raised by one with each row admitted. Only a create the bound
would take past the quota counts, and the count replaces the bound. Rows deleted leave the bound
high, which costs a count later, never a wrong answer; a row inserted without `admit` (fixture rows,
issued certificates, keys made by the command line) must `forget` the bound, or the quota could be
passed by that many rows.

On SQLite a process that is the database's only writer raises the bound `LEASE` rows at a time
and keeps the slots it has not used yet with its writer connection (`_Slots`): the creates
that take one write no bound and run no statement of the quota's but SQLite's
`data_version`, which says whether another connection committed since (it may have lowered
or dropped the bound: the slots are then given up). A bound write costs a create ~9% of its
instructions (bench/README.md, issue 31). Slots never taken leave the bound high, which costs
a count later, as a delete does."""

from __future__ import annotations

import functools
from typing import Any

from sqlalchemy import bindparam, delete, func, insert, literal, select, update
from sqlmodel import col

from tunnelgw import models
from tunnelgw.core import settings
from tunnelgw.core.errors import ApiError, Code
from tunnelgw.models import Account, QuotaUsage
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
        model = models.table_named(kind)
        if model is None or not model.QUOTA:
            known = ", ".join(sorted(models.QUOTA_KINDS))
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


# Rows of bound a SQLite writer raises at once (`_Slots`), and the (account, kind) pairs it
# keeps slots of at most.
LEASE = 32
MAX_KEPT = 4096
_RESERVE = Query(
    update(QuotaUsage)
    .where(col(QuotaUsage.account_id) == bindparam("account"))
    .where(col(QuotaUsage.kind) == bindparam("kind"))
    .where(col(QuotaUsage.bound) + LEASE <= bindparam("quota"))
    .values(bound=col(QuotaUsage.bound) + LEASE)
    .returning(col(QuotaUsage.bound))
)


class _Slots:
    """Rows of quota bound this process's SQLite writer raised ahead of its creates and has
    not used, by (account, kind), with the quota they were raised under. The bound counts
    them, so a create may take one instead of raising the bound, for as long as no other
    connection has committed since they were raised (`version`: the writer's `data_version`
    then; another process may have lowered or dropped the bound since). This process's own
    lowering of a bound (a count, `forget`, `forget_all`) drops them here, and the slots of
    units not yet committed with them: a unit raising slots notes `drops` (how many times
    slots were dropped), and its slots count only if no drop came in between.

    Slots are raised only while this process looks like the only writer (`alone`: no other
    connection committed between its last two admissions): writers that take turns would give
    up each other's slots, raising the bound for nothing."""

    __slots__ = ("alone", "drops", "left", "version")

    def __init__(self) -> None:
        self.left: dict[tuple[str, str], tuple[int, int]] = {}
        self.version: int | None = None
        self.alone = False
        self.drops = 0

    def take(self, version: int, key: tuple[str, str], quota: int) -> bool:
        """Use one slot of `key` raised under `quota`, if one is left (`version`: the
        writer's data_version now; any other, and the slots are given up)."""
        self.alone = version == self.version
        if not self.alone:
            self.clear()
            self.version = version
        found = self.left.get(key)
        if found is None or found[1] != quota:
            return False
        if found[0] > 1:
            self.left[key] = (found[0] - 1, quota)
        else:
            del self.left[key]
        return True

    def add(self, version: int, drops: int, key: tuple[str, str], count: int, quota: int) -> None:
        """`count` slots of `key` raised under `quota` by a unit that committed, which saw
        data_version `version` and `drops`: kept unless slots were given up since."""
        if drops != self.drops or version != self.version:
            return
        if len(self.left) >= MAX_KEPT:  # accounts come and go: give up the slots kept so far
            self.clear()
        held = self.left.get(key)
        self.left[key] = (count + (held[0] if held and held[1] == quota else 0), quota)

    def drop(self, account_id: str, kind: str | None = None) -> None:
        """Give up the account's slots (of `kind`, or all), and those not yet committed."""
        self.drops += 1
        for key in [key for key in self.left if key[0] == account_id]:
            if kind is None or key[1] == kind:
                del self.left[key]

    def clear(self) -> None:
        self.drops += 1
        self.left.clear()


def _slots(unit: Unit) -> _Slots | None:
    """The slots kept with a SQLite write unit's connection (None on PostgreSQL)."""
    state = unit.kept()
    if state is None:
        return None
    slots: _Slots | None = state.get("quota_slots")
    if slots is None:
        slots = state["quota_slots"] = _Slots()
    return slots


def _drop(unit: Unit, account_id: str, kind: str | None = None) -> None:
    """Give up this process's slots of the account's bound (of `kind`, or all): it was just
    dropped (`forget`, `forget_all`)."""
    slots = _slots(unit)
    if slots is not None:
        slots.drop(account_id, kind)


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

    No statement when a slot raised ahead is left (SQLite), else one while the bound is below
    the quota (raised by `LEASE` or by one where it is); else the rows are counted and the
    count, plus the row admitted, becomes the bound."""
    kind = kind_of(model)
    quota = settings.current().quota(kind) if limit is None else limit
    await take_turn(unit, account_id)
    params: dict[str, Any] = {"account": account_id, "kind": kind, "quota": quota}
    slots = _slots(unit) if limit is None else None
    if slots is not None:
        version = unit.data_version()
        key = (account_id, kind)
        if slots.take(version, key, quota):
            return
        drops = slots.drops
        if slots.alone and (await unit.exec(_RESERVE, params)).first() is not None:
            unit.after_commit(lambda: slots.add(version, drops, key, LEASE - 1, quota))
            return
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
    if slots is not None:  # the bound is lowered: the slots it counted are gone
        slots.drop(account_id, kind)
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
    _drop(unit, account_id, kind_of(model))


_FORGET_ALL = Query(delete(QuotaUsage).where(col(QuotaUsage.account_id) == bindparam("account")))


async def forget_all(unit: Unit, account_id: str) -> None:
    """Drop every bound of the account (its next create of each kind counts): for rows of
    several kinds inserted without `admit` (a fixture's)."""
    await unit.exec(_FORGET_ALL, {"account": account_id})
    _drop(unit, account_id)
