"""Units of work: commit on success, roll back on error, constraint violations as 409."""

from __future__ import annotations

import asyncio

import pytest
from sqlmodel import select

from models import Account
from tests.unit.test_migrations import url  # noqa: F401  (a fresh database per engine)
from tunnelgw import migrate
from tunnelgw.db import Database
from tunnelgw.errors import ApiError, Code
from tunnelgw.settings import async_url


def _run(url_: str, scenario) -> object:
    async def main() -> object:
        database = Database(async_url(url_))
        try:
            return await scenario(database)
        finally:
            await database.dispose()

    return asyncio.run(main())


def test_constraint_violation_is_a_conflict_and_writes_nothing(url):  # noqa: F811
    migrate.upgrade(url)

    async def add(database: Database, *accounts: Account) -> None:
        async with database.write() as session:
            session.add_all(accounts)

    async def scenario(database: Database) -> list[str]:
        await add(database, Account(id="acct_dup", name="first"))
        with pytest.raises(ApiError) as info:
            await add(
                database,
                Account(id="acct_other", name="written?"),
                Account(id="acct_dup", name="second"),
            )
        assert info.value.code is Code.CONFLICT
        async with database.read() as session:
            return sorted((await session.exec(select(Account.name))).all())

    assert _run(url, scenario) == ["first"]


def test_an_exception_in_the_block_rolls_back(url):  # noqa: F811
    migrate.upgrade(url)

    async def failing_handler(database: Database) -> None:
        async with database.write() as session:
            session.add(Account(id="acct_rolled_back"))
            await session.flush()
            raise RuntimeError("handler failed")

    async def scenario(database: Database) -> int:
        with pytest.raises(RuntimeError, match="handler failed"):
            await failing_handler(database)
        async with database.read() as session:
            return len((await session.exec(select(Account))).all())

    assert _run(url, scenario) == 0
