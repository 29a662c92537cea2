"""Engine and units of work.

`read()` and `write()` are the only ways handlers touch the database. A write unit commits
on success and rolls back on any exception, so a failed request never leaves a half-written
row. On SQLite, writes are serialised within the process (an asyncio lock) and begin with
`BEGIN IMMEDIATE`, so concurrent writers from several workers queue in SQLite's busy
handler instead of failing with "database is locked". SQLite reads run in autocommit (no
BEGIN): each statement reads its own consistent snapshot, which is all a single-statement
read needs; a unit whose statements must agree with each other uses `write()`.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

from sqlalchemy import event
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncEngine, async_sessionmaker, create_async_engine
from sqlmodel import SQLModel
from sqlmodel.ext.asyncio.session import AsyncSession

from tunnelgw.errors import ApiError, Code

_WRITE = "tunnelgw_write"


class Database:
    """One engine and its session factory."""

    def __init__(self, url: str, *, echo: bool = False) -> None:
        self.url = url
        # Sessions always end their own transaction, so the pool's extra rollback on
        # check-in is a wasted round trip (a thread hop per request on aiosqlite).
        self.engine: AsyncEngine = create_async_engine(
            url, echo=echo, pool_pre_ping=False, pool_reset_on_return=None
        )
        self.is_sqlite = self.engine.dialect.name == "sqlite"
        if self.is_sqlite:
            _configure_sqlite(self.engine)
        self._sessions = async_sessionmaker(
            self.engine, class_=AsyncSession, expire_on_commit=False, autoflush=False
        )
        self._write_lock = asyncio.Lock() if self.is_sqlite else None

    @asynccontextmanager
    async def read(self) -> AsyncIterator[AsyncSession]:
        """A session for reads; rolled back at the end."""
        async with self._sessions() as session:
            yield session

    @asynccontextmanager
    async def write(self) -> AsyncIterator[AsyncSession]:
        """A session in one transaction: committed if the block succeeds, else rolled back.

        A constraint violation (a concurrent request got there first: a unique value taken,
        a referenced row deleted) is rolled back and raised as ApiError(409 ERR_CONFLICT);
        handlers check such rules first and the constraint is the last word under races.
        """
        async with self._write_lock or contextlib.nullcontext(), self._sessions() as session:
            # Starts the transaction; on SQLite the option makes it BEGIN IMMEDIATE.
            await session.connection(execution_options={_WRITE: True})
            try:
                yield session
                await session.commit()
            except IntegrityError as exc:
                await session.rollback()
                raise ApiError(
                    Code.CONFLICT, "The request conflicts with a concurrent change; retry it."
                ) from exc

    async def create_schema(self) -> None:
        """Create every table of the models (idempotent)."""
        import models  # noqa: F401  (registers the tables)

        async with self.engine.begin() as conn:
            await conn.run_sync(SQLModel.metadata.create_all)

    async def dispose(self) -> None:
        await self.engine.dispose()


def _configure_sqlite(engine: AsyncEngine) -> None:
    sync_engine = engine.sync_engine

    @event.listens_for(sync_engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Let SQLAlchemy's "begin" event emit BEGIN itself (pysqlite's own is deferred).
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        for pragma in (
            "journal_mode=WAL",
            "busy_timeout=5000",
            "synchronous=NORMAL",
            "foreign_keys=ON",
        ):
            cursor.execute(f"PRAGMA {pragma}")
        cursor.close()

    @event.listens_for(sync_engine, "begin")
    def _on_begin(conn: Any) -> None:
        if conn.get_execution_options().get(_WRITE, False):
            conn.exec_driver_sql("BEGIN IMMEDIATE")


_current: Database | None = None


def init(url: str) -> Database:
    """Make `url` the process's database (called by the app's lifespan)."""
    global _current
    _current = Database(url)
    return _current


def current() -> Database:
    if _current is None:
        raise RuntimeError("database not initialised")
    return _current


def read() -> Any:
    """`async with db.read() as session:` on the process's database."""
    return current().read()


def write() -> Any:
    """`async with db.write() as session:` on the process's database."""
    return current().write()


T = TypeVar("T")


def run_with(url: str, work: Callable[[Database], Awaitable[T]]) -> T:
    """Run `await work(database)` on a fresh Database for `url`, outside any event loop (the
    CLI and the fixture loader); the engine is disposed afterwards."""

    async def runner() -> T:
        database = Database(url)
        try:
            return await work(database)
        finally:
            await database.dispose()

    return asyncio.run(runner())
