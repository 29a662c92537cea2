"""Per-account bounds of append-only records (tunnelgw.services.bounds): reads never go past an
account's newest `keep` rows, and the rows past them are deleted once a tenth of `keep` more
were written, never another account's."""

from __future__ import annotations

import asyncio
from typing import Any

from sqlalchemy import func, select
from sqlmodel import col

from tests.unit.test_migrations import url  # noqa: F401  (a fresh database per engine)
from tunnelgw.core import ids, timefmt
from tunnelgw.migrations import migrate
from tunnelgw.models import Account, EventDelivery
from tunnelgw.services.bounds import Bound, slack
from tunnelgw.storage.db import Database

COLUMNS = ("id", "account_id", "created_at", "event_id", "event_type", "subscription_id")
COLUMNS += ("destination_id", "event", "outcome")
BOUND = Bound(EventDelivery, col(EventDelivery.account_id), col(EventDelivery.id))
KEEP = 20


def _row(account_id: str) -> tuple[Any, ...]:
    return (
        ids.new_id("evd"),
        account_id,
        timefmt.utcnow(),
        "ev_1",
        "t.v0",
        "esb_1",
        "ed_1",
        {},
        "delivered",
    )


async def _write(database: Database, account_id: str, count: int) -> list[str]:
    rows = [_row(account_id) for _ in range(count)]
    async with database.write() as unit:
        await unit.insert_many(EventDelivery, COLUMNS, rows)
        await BOUND.wrote(unit, database, account_id, count, KEEP)
    return [row[0] for row in rows]


async def _state(database: Database, account_id: str) -> tuple[int, list[str]]:
    """How many rows of the account are stored, and the ids a read shows."""
    delivery = EventDelivery
    async with database.read() as unit:
        mine = col(delivery.account_id) == account_id
        stored = (await unit.exec(select(func.count()).select_from(delivery).where(mine))).one()
        start = await BOUND.floor(unit, account_id, KEEP)
        shown = select(col(delivery.id)).where(mine).order_by(col(delivery.id))
        if start is not None:
            shown = shown.where(col(delivery.id) >= start)
        return stored, list((await unit.exec(shown)).all())


def test_reads_stop_at_the_bound_and_the_rest_goes_a_slack_at_a_time(url):  # noqa: F811
    migrate.upgrade(url)
    assert [slack(KEEP), slack(5), slack(0)] == [2, 1, 1]

    async def main() -> None:
        database = Database(url)
        try:
            async with database.write() as unit:
                unit.add_all([Account.new(id=a, name=a) for a in ("acct_a", "acct_b")])
            other = await _write(database, "acct_b", 3)
            written: list[str] = []
            for n in range(1, 26):
                written += await _write(database, "acct_a", 1)
                stored, shown = await _state(database, "acct_a")
                assert shown == written[-KEEP:]  # never more than the newest KEEP
                # Past the bound, the oldest wait until 2 (a tenth) more were written.
                assert stored == (n if n <= KEEP else KEEP + n % 2), n
            written += await _write(database, "acct_a", 7)  # a batch counts all its rows
            assert await _state(database, "acct_a") == (KEEP, written[-KEEP:])
            assert await _state(database, "acct_b") == (3, other)
        finally:
            await database.dispose()

    asyncio.run(main())
