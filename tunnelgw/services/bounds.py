"""Per-account bounds of append-only records (the request journal, event deliveries): an
account keeps its newest `keep` rows, in the order of one column of the table, or with
`WeightedBound` its newest `keep` items of rows that hold several (an event's deliveries).

Rows past the bound are not deleted as each is written: a process deletes an account's
oldest once it has written `slack` more of them (half of `keep`, at least 1) since it last
did, in one statement for many rows: so an account holds up to 1.5 times `keep` rows on disk,
and finding where to cut (which reads the newest `keep`) costs 2 rows' reads per row written
(a tenth of `keep` cost 10: bench/README.md, issue 31). Reads start at `floor`, so they never
show more than the newest `keep`, whatever waits to be deleted (rows of other processes, or of
a transaction whose trim was rolled back, are deleted at a later trim).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

from sqlalchemy import bindparam, delete, select
from sqlmodel import col

from tunnelgw.storage.db import Database
from tunnelgw.storage.statements import Query
from tunnelgw.storage.unit import Unit


def slack(keep: int) -> int:
    """How many rows of an account a process writes between two trims."""
    return max(1, keep // 2)


class Bound:
    """The bound of one table, `table()` (called on first use: the table is imported when
    first named, tunnelgw.models): its rows are the account's (`account`, a column's name)
    and ordered by `order` (a column's name: oldest lowest)."""

    def __init__(self, table: Callable[[], type[Any]], account: str, order: str) -> None:
        self._table = table
        # The `order` of an account's `keep`-th newest row (offset keep - 1).
        self._nth_newest = Query(
            lambda: (
                select(self.column(order))
                .where(self.column(account) == bindparam("account"))
                .order_by(self.column(order).desc())
                .limit(1)
                .offset(bindparam("offset"))
            )
        )
        # The account's rows older than the first a read shows (`floor`).
        self._trim = Query(
            lambda: (
                delete(table())
                .where(self.column(account) == bindparam("account"))
                .where(self.column(order) < bindparam("first"))
            )
        )
        # Per database, per account: rows this process wrote since it last trimmed.
        self._unswept: weakref.WeakKeyDictionary[Database, dict[str, int]] = (
            weakref.WeakKeyDictionary()
        )

    def column(self, name: str) -> Any:
        """The table's column `name`, for statements."""
        return col(getattr(self._table(), name))

    async def wrote(
        self, unit: Unit, database: Database, account_id: str, count: int, keep: int
    ) -> None:
        """Count `count` rows of the account written in `unit` (a write unit of `database`);
        once `slack(keep)` are counted, delete its rows older than its newest `keep`."""
        unswept = self._unswept.setdefault(database, {})
        written = unswept.get(account_id, 0) + count
        if written >= slack(keep):
            await self._trim_past(unit, account_id, keep)
            written = 0
        unswept[account_id] = written

    async def _trim_past(self, unit: Unit, account_id: str, keep: int) -> None:
        """Delete the account's rows that no read shows any more (older than `floor`)."""
        first = await self.floor(unit, account_id, keep)
        if first is not None:
            await unit.exec(self._trim, {"account": account_id, "first": first})

    async def floor(self, unit: Unit, account_id: str, keep: int) -> Any:
        """The `order` of the account's oldest row among its newest `keep` (reads start
        there), or None when it has fewer than `keep`."""
        found = await unit.exec(self._nth_newest, {"account": account_id, "offset": keep - 1})
        return found.first()


class WeightedBound(Bound):
    """The bound of a table whose rows each hold `weight` (a column) items: an account keeps
    its newest `keep` items. The row that holds the `keep`-th newest item is kept whole, and
    reads skip its items past the bound (`floor`'s excess)."""

    def __init__(
        self, table: Callable[[], type[Any]], account: str, order: str, weight: str
    ) -> None:
        super().__init__(table, account, order)
        # The account's newest rows, newest first, with their weights: at most `keep` of them
        # hold its newest `keep` items (a row holds one at least). Summed here, not by a window
        # function in SQL, which totals all the account's rows first (~8 times the cost).
        self._newest = Query(
            lambda: (
                select(self.column(order), self.column(weight))
                .where(self.column(account) == bindparam("account"))
                .order_by(self.column(order).desc())
                .limit(bindparam("keep"))
            )
        )

    async def floor(self, unit: Unit, account_id: str, keep: int) -> Any:
        """The `order` of the row that holds the account's `keep`-th newest item (reads start
        there, and trims delete the rows before it), or None when it has fewer."""
        found = await self.floor_and_excess(unit, account_id, keep)
        return found[0] if found is not None else None

    async def floor_and_excess(
        self, unit: Unit, account_id: str, keep: int
    ) -> tuple[Any, int] | None:
        """The `order` of the row that holds the account's `keep`-th newest item, and how
        many of that row's items (its oldest) are past the bound; None when the account has
        fewer than `keep` items."""
        total = 0
        for first, weight in await unit.exec(self._newest, {"account": account_id, "keep": keep}):
            total += weight
            if total >= keep:
                return first, total - keep
        return None
