"""SQLite checkpoints: the WAL's pages reach the database file through a thread of the
process, never through the writer on the event loop (tunnelgw.storage.checkpoints)."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from tunnelgw.migrations import migrate
from tunnelgw.models import Account
from tunnelgw.storage.checkpoints import BACKSTOP_PAGES, Checkpointer
from tunnelgw.storage.db import Database


def _in_the_file(path: Path) -> list[str]:
    """The accounts the database file itself holds, without what its WAL holds (`immutable`:
    SQLite reads the file alone)."""
    with sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True) as conn:
        return sorted(row[0] for row in conn.execute("SELECT id FROM account"))


async def _file_once_it_holds(path: Path, account_id: str, seconds: float = 10.0) -> list[str]:
    """The accounts in the file (`_in_the_file`), read again until they include `account_id`
    (the last read, if they never do). A read of the file alone while the thread writes it may
    find a page half copied and fail or miss rows: it is read again, and what the test checks
    is the read that found the account, not a later one."""
    found: list[str] = []
    for _ in range(int(seconds / 0.02)):
        try:
            found = _in_the_file(path)
        except sqlite3.DatabaseError:
            found = []
        if account_id in found:
            break
        await asyncio.sleep(0.02)
    return found


@pytest.fixture
def path(tmp_path: Path) -> Path:
    """A migrated SQLite database file."""
    path = tmp_path / "checkpoints.db"
    migrate.upgrade(f"sqlite:///{path}")
    return path


def _run(path: Path, scenario) -> Any:
    """`await scenario(database)` on a `Database` of `path`, disposed after."""

    async def main() -> Any:
        database = Database(f"sqlite:///{path}")
        try:
            return await scenario(database)
        finally:
            await database.dispose()

    return asyncio.run(main())


def test_committed_pages_reach_the_file_through_the_thread(path):
    async def scenario(database: Database) -> tuple[object, ...]:
        async with database.write() as unit:
            unit.add(Account.new(id="acct_ck1", name="one"))
        checkpoints = database._checkpoints
        assert checkpoints is not None
        assert checkpoints.running
        async with database.write() as unit:
            [(backstop,)] = (await unit.exec(text("PRAGMA wal_autocheckpoint"))).all()
        found = await _file_once_it_holds(path, "acct_ck1")
        # The thread counts a checkpoint once SQLite's returns, after the pages are copied.
        for _ in range(500):
            if checkpoints.checkpoints >= 1:
                break
            await asyncio.sleep(0.01)
        return backstop, found, checkpoints.checkpoints >= 1

    assert _run(path, scenario) == (BACKSTOP_PAGES, ["acct_ck1"], True)


def test_without_the_thread_the_writer_leaves_the_pages_in_the_wal(path):
    """The writer's own automatic checkpoint waits for `BACKSTOP_PAGES`: a few commits stay in
    the WAL, read from there, until the thread copies them (or the last connection closes)."""

    async def scenario(database: Database) -> tuple[int, list[str]]:
        async with database.write() as unit:
            unit.add(Account.new(id="acct_w0", name="first"))
        assert database._checkpoints is not None
        database._checkpoints.close()
        for i in range(1, 20):
            async with database.write() as unit:
                unit.add(Account.new(id=f"acct_w{i}", name=f"n{i}"))
        async with database.read() as unit:
            seen = len((await unit.exec(text("SELECT id FROM account"))).all())
        return seen, [a for a in _in_the_file(path) if a.startswith("acct_w")]

    seen, in_file = _run(path, scenario)
    assert seen == 20
    assert set(in_file) <= {"acct_w0"}  # the first commit, should the thread have run
    assert len(_in_the_file(path)) == 20  # the last connection to close checkpointed the rest


def test_dispose_stops_the_thread_and_memory_databases_have_none(path):
    async def opened(database: Database) -> tuple[Checkpointer | None, bool]:
        async with database.read() as unit:
            await unit.exec(text("SELECT 1"))
        checkpoints = database._checkpoints
        return checkpoints, checkpoints is not None and checkpoints.running

    checkpoints, was_running = _run(path, opened)
    assert was_running
    assert checkpoints is not None
    assert not checkpoints.running
    assert _run(Path(":memory:"), opened) == (None, False)


def test_a_failed_checkpoint_is_logged_and_the_next_commit_tries_again(tmp_path, caplog):
    """A checkpoint that fails (here: the file is not a database) is a warning, not the end
    of the thread."""
    bad = tmp_path / "not-a-database"
    bad.write_bytes(b"plain text, not SQLite" * 100)
    checkpoints = Checkpointer(str(bad), interval=0.01)
    try:
        with caplog.at_level(logging.WARNING, logger="tunnelgw"):
            for _ in range(2):
                before = len(caplog.records)
                checkpoints.committed()
                for _ in range(500):
                    if len(caplog.records) > before:
                        break
                    time.sleep(0.01)
        failures = [r for r in caplog.records if "checkpoint of" in r.getMessage()]
        assert len(failures) == 2
        assert checkpoints.running
        assert checkpoints.checkpoints == 0
    finally:
        checkpoints.close()
    assert not checkpoints.running
