"""Per-account bounds of append-only records (tunnelgw.services.bounds): reads never go past an
account's newest `keep` rows (or items of rows, weighted), and the rows past them are deleted
once half of `keep` more were written, never another account's."""

from __future__ import annotations

import asyncio
from typing import Any

from sqlalchemy import func, select
from sqlmodel import col

from tests.unit.test_migrations import url  # noqa: F401  (a fresh database per engine)
from tunnelgw.core import ids, timefmt
from tunnelgw.migrations import migrate
from tunnelgw.models import Account, EventRecord, JournalEntry
from tunnelgw.services.bounds import Bound, WeightedBound, slack
from tunnelgw.storage.db import Database

JOURNAL = ("account_id", "at", "request_id", "method", "path", "query", "operation", "status")
JOURNAL += ("principal_id", "duration_ms", "body_bytes")
BOUND = Bound(lambda: JournalEntry, "account_id", "seq")
EVENTS = ("id", "account_id", "created_at", "event_type", "event", "deliveries")
EVENTS += ("delivery_count",)
WEIGHTED = WeightedBound(lambda: EventRecord, "account_id", "id", "delivery_count")
KEEP = 20


async def _accounts(database: Database) -> None:
    async with database.write() as unit:
        unit.add_all([Account.new(id=a, name=a) for a in ("acct_a", "acct_b")])


async def _write(database: Database, account_id: str, count: int) -> list[int]:
    now = timefmt.utcnow()
    rows = [(account_id, now, "op_1", "GET", "/", "", "x", 200, "usr_1", 0.1, 0)] * count
    async with database.write() as unit:
        await unit.insert_many(JournalEntry, JOURNAL, rows)
        await BOUND.wrote(unit, database, account_id, count, KEEP)
    async with database.read() as unit:
        newest = select(col(JournalEntry.seq)).where(col(JournalEntry.account_id) == account_id)
        found = await unit.exec(newest.order_by(col(JournalEntry.seq).desc()).limit(count))
        return sorted(found.all())


async def _state(database: Database, account_id: str) -> tuple[int, list[int]]:
    """How many rows of the account are stored, and the seqs a read shows."""
    entry = JournalEntry
    async with database.read() as unit:
        mine = col(entry.account_id) == account_id
        stored = (await unit.exec(select(func.count()).select_from(entry).where(mine))).one()
        start = await BOUND.floor(unit, account_id, KEEP)
        shown = select(col(entry.seq)).where(mine).order_by(col(entry.seq))
        if start is not None:
            shown = shown.where(col(entry.seq) >= start)
        return stored, list((await unit.exec(shown)).all())


def test_reads_stop_at_the_bound_and_the_rest_goes_a_slack_at_a_time(url):  # noqa: F811
    migrate.upgrade(url)
    assert [slack(KEEP), slack(5), slack(0)] == [10, 2, 1]

    async def main() -> None:
        database = Database(url)
        try:
            await _accounts(database)
            other = await _write(database, "acct_b", 3)
            written: list[int] = []
            for n in range(1, 46):
                written += await _write(database, "acct_a", 1)
                stored, shown = await _state(database, "acct_a")
                assert shown == written[-KEEP:]  # never more than the newest KEEP
                # Past the bound, the oldest wait until 10 (half) more were written.
                assert stored == (n if n <= KEEP else KEEP + n % 10), n
            written += await _write(database, "acct_a", 7)  # a batch counts all its rows
            assert await _state(database, "acct_a") == (KEEP, written[-KEEP:])
            assert await _state(database, "acct_b") == (3, other)
        finally:
            await database.dispose()

    asyncio.run(main())


async def _fire(database: Database, account_id: str, weights: list[int]) -> None:
    now = timefmt.utcnow()
    rows = [
        (ids.new_id("ev"), account_id, now, "t.v0", {}, [[k] for k in range(w)], w) for w in weights
    ]
    async with database.write() as unit:
        await unit.insert_many(EventRecord, EVENTS, rows)
        await WEIGHTED.wrote(unit, database, account_id, sum(weights), KEEP)


async def _weighted(database: Database, account_id: str) -> tuple[list[int], Any]:
    """The weights of the account's stored rows, oldest first, and the floor with its
    excess."""
    async with database.read() as unit:
        mine = select(col(EventRecord.delivery_count)).where(
            col(EventRecord.account_id) == account_id
        )
        weights = list((await unit.exec(mine.order_by(col(EventRecord.id)))).all())
        return weights, await WEIGHTED.floor_and_excess(unit, account_id, KEEP)


def test_a_weighted_bound_counts_items_and_keeps_the_row_that_reaches_it(url):  # noqa: F811
    migrate.upgrade(url)

    async def main() -> None:
        database = Database(url)
        try:
            await _accounts(database)
            await _fire(database, "acct_b", [5])
            await _fire(database, "acct_a", [7, 7])
            weights, floor = await _weighted(database, "acct_a")
            assert (weights, floor) == ([7, 7], None)  # 14 items: under the bound
            await _fire(database, "acct_a", [7])  # 21: the first row holds 1 past it
            weights, floor = await _weighted(database, "acct_a")
            assert weights == [7, 7, 7]
            assert floor is not None
            assert floor[1] == 1
            await _fire(database, "acct_a", [7])  # 28: the first row is all past the bound
            weights, floor = await _weighted(database, "acct_a")
            assert weights == [7, 7, 7]  # deleted: 14 written since the last trim (>= 10)
            assert floor is not None
            assert floor[1] == 1
            await _fire(database, "acct_a", [20])  # exactly the bound: the rest goes
            weights, floor = await _weighted(database, "acct_a")
            assert weights == [20]
            assert floor is not None
            assert floor[1] == 0
            assert await _weighted(database, "acct_b") == ([5], None)
        finally:
            await database.dispose()

    asyncio.run(main())
