"""What a write unit offers the services above it: actions run once it committed
(`Unit.after_commit`), and on SQLite the state kept with the writer connection
(`Unit.kept`) and its `data_version`."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from typing import Any

import pytest

from tests.unit.test_db import _run, dangling_principal
from tests.unit.test_migrations import url  # noqa: F401  (a fresh database per engine)
from tunnelgw.core.errors import ApiError
from tunnelgw.migrations import migrate
from tunnelgw.models import Account
from tunnelgw.storage.db import Database


def test_actions_run_once_the_unit_committed_and_never_for_one_that_failed(url):  # noqa: F811
    migrate.upgrade(url)
    ran: list[str] = []

    async def failing(database: Database) -> None:
        async with database.write() as unit:
            unit.after_commit(lambda: ran.append("rolled back"))
            raise RuntimeError("handler failed")

    async def conflicting(database: Database) -> None:
        async with database.write() as unit:
            unit.add(Account.new(id="acct_hooks", name="again"))
            unit.after_commit(lambda: ran.append("conflict"))

    async def scenario(database: Database) -> None:
        async with database.write() as unit:
            unit.add(Account.new(id="acct_hooks", name="hooks"))
            unit.after_commit(lambda: ran.append("committed"))
            assert ran == []
        with pytest.raises(RuntimeError):
            await failing(database)
        with pytest.raises(ApiError):  # the same id again: a conflict when it is written
            await conflicting(database)

    _run(url, scenario)
    assert ran == ["committed"]


def test_no_action_runs_when_the_shared_transaction_fails_to_commit(tmp_path):
    """SQLite's units of one turn share a transaction: one that only the commit finds at
    fault (a deferred foreign key) fails them all, and none of their actions runs."""
    url_ = f"sqlite:///{tmp_path / 'h.db'}"
    migrate.upgrade(url_)
    ran: list[str] = []

    async def add(database: Database, dangling: bool) -> None:
        async with database.write() as unit:
            unit.after_commit(lambda: ran.append("dangling" if dangling else "plain"))
            if dangling:
                await dangling_principal(unit)
            else:
                unit.add(Account.new(id="acct_plain", name="plain"))

    async def scenario(database: Database) -> list[Any]:
        return list(
            await asyncio.gather(add(database, False), add(database, True), return_exceptions=True)
        )

    results = _run(url_, scenario)
    assert [type(result) for result in results] == [ApiError, ApiError]
    assert ran == []


def test_the_sqlite_writer_keeps_state_and_tells_when_another_connection_committed(tmp_path):
    path = tmp_path / "k.db"
    migrate.upgrade(f"sqlite:///{path}")

    async def scenario(database: Database) -> list[tuple[dict[str, Any], int]]:
        seen = []
        for step in range(3):
            if step == 2:  # another connection (another process, say) commits
                with contextlib.closing(sqlite3.connect(path)) as other:
                    other.execute("CREATE TABLE scratch (x)")
                    other.commit()
            async with database.write() as unit:
                state = unit.kept()
                assert state is not None
                state.setdefault("steps", []).append(step)
                kept = (state, unit.data_version())
                unit.add(Account.new(id=f"acct_{step}", name=str(step)))  # its own commit
                seen.append(kept)
        return seen

    (first, v0), (second, v1), (third, v2) = _run(f"sqlite:///{path}", scenario)
    assert first is second is third
    assert first["steps"] == [0, 1, 2]
    assert v1 == v0  # this connection's own commit leaves it as it was
    assert v2 != v1


def test_postgresql_write_units_keep_nothing(url):  # noqa: F811
    if not url.startswith("postgresql"):
        pytest.skip("the PostgreSQL case")
    migrate.upgrade(url)

    async def scenario(database: Database) -> Any:
        async with database.write() as unit:
            return unit.kept()

    assert _run(url, scenario) is None
