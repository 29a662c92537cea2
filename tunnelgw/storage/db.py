"""The database: units of work over one connection, SQL run directly on the driver.

`read()` and `write()` are the only ways handlers touch the database; both give a `Unit`.

- **SQLite** (stdlib `sqlite3`) runs inline on the event loop: a statement takes
  microseconds, far less than a hop to a helper thread. Each process has one connection for
  writes and one for reads (autocommit, `query_only`); a read unit's queries run on the
  writer while it has no transaction open, whose page cache survives the process's own
  commits (`SqliteReads`), and every statement reads its own consistent snapshot. Write
  units are serialised per process by an asyncio lock, and those of one turn of the event
  loop share a transaction begun with `BEGIN IMMEDIATE` (group commit:
  tunnelgw.storage.group_commit); writers of several processes queue in SQLite's busy
  handler (`busy_timeout`) rather than fail, and WAL lets readers go on meanwhile. The WAL is
  checkpointed by a thread of the process, not by the writer on the loop
  (tunnelgw.storage.checkpoints).
- **PostgreSQL** (asyncpg: native asyncio, binary protocol, each connection keeps its
  prepared statements) takes connections from asyncpg's pool: reads in autocommit (one
  round trip per statement), writes in one transaction. Statements reach the connection in
  one convention, `%s` placeholders and `%%` for a literal `%` (`unit.mark`; SQLAlchemy
  compiles in it too), and are numbered (`$1`, `$2`, ...) for the driver there.

A write unit commits when its block succeeds and rolls back on any exception, so a failed
request never leaves a half-written row; a constraint violation (a concurrent request got
there first) becomes 409 `ERR_CONFLICT`. Rows are records (tunnelgw.storage.records);
statements are the generated per-table SQL, SQLAlchemy statements compiled once per dialect
(tunnelgw.storage.statements), or, on rare paths, SQLAlchemy statements compiled per call.
The units themselves are tunnelgw.storage.unit, the drivers tunnelgw.storage.connections.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from collections.abc import Awaitable, Callable
from contextvars import ContextVar, Token
from typing import Any, TypeVar

from sqlalchemy.engine import make_url

from tunnelgw.storage.checkpoints import BACKSTOP_PAGES, Checkpointer
from tunnelgw.storage.connections import (
    PG_STATEMENT_CACHE,
    SQLITE_PRAGMAS,
    WRITER_CACHE_KIB,
    PgConnection,
    SqliteConnection,
    SqliteReads,
    configure_pg,
    keep_session,
    private_sqlite_file,
    raise_if_conflict,
)
from tunnelgw.storage.group_commit import GroupCommit, Member
from tunnelgw.storage.unit import Unit

T = TypeVar("T")

# PostgreSQL connections per worker process (the default of `database_pool_size`): fewer
# than the requests in flight and requests queue for one (bench/README: 10 -> 32 gave +13% of
# GET throughput at 32 connections); opened on demand from one.
POOL_MAX_SIZE = 32


class Database:
    """One database (SQLite file or PostgreSQL), opened on first use."""

    def __init__(self, url: str, pool_size: int = POOL_MAX_SIZE) -> None:
        self.url = url
        self.pool_size = pool_size  # PostgreSQL connections at most (a pool opened on demand)
        parsed = make_url(url)
        self.dialect = parsed.get_backend_name()
        if self.dialect not in ("sqlite", "postgresql"):
            raise ValueError(f"unsupported database {self.dialect!r}: use SQLite or PostgreSQL")
        self.is_sqlite = self.dialect == "sqlite"
        self._path = parsed.database or ":memory:"
        self._conninfo = parsed.set(drivername="postgresql").render_as_string(hide_password=False)
        self._reader: SqliteConnection | None = None
        self._writer: SqliteConnection | None = None
        self._reads: SqliteReads | SqliteConnection | None = None  # a read unit's
        self._checkpoints: Checkpointer | None = None  # a SQLite file's, with its writer
        self._group = GroupCommit(
            lambda: self._sqlite(writer=True), lambda: self._writer, self._committed
        )
        self._pool: Any = None
        self._pool_loop: asyncio.AbstractEventLoop | None = None

    def read(self) -> _ReadScope:
        """`async with database.read() as unit:` statements outside a transaction."""
        return _ReadScope(self)

    def write(self) -> _WriteScope:
        """`async with database.write() as unit:` one transaction, committed on success."""
        return _WriteScope(self)

    def _sqlite(self, *, writer: bool) -> SqliteConnection:
        if self._writer is None:
            private_sqlite_file(self._path)
            self._writer = SqliteConnection(self._connect(query_only=False))
            memory = self._path in ("", ":memory:")
            self._reader = self._writer if memory else SqliteConnection(self._connect(True))
            self._reads = self._writer if memory else SqliteReads(self._reader, self._writer)
            if not memory:
                self._checkpoints = Checkpointer(self._path)
        return self._writer if writer else self._reader  # type: ignore[return-value]

    def _committed(self) -> None:
        if self._checkpoints is not None:
            self._checkpoints.committed()

    def _sqlite_reads(self) -> SqliteReads | SqliteConnection:
        """What a read unit's statements run on (`SqliteReads`)."""
        if self._reads is None:
            self._sqlite(writer=False)
        return self._reads  # type: ignore[return-value]

    def _connect(self, query_only: bool) -> sqlite3.Connection:
        raw = sqlite3.connect(
            self._path, isolation_level=None, check_same_thread=False, cached_statements=512
        )
        for pragma in SQLITE_PRAGMAS:
            raw.execute(f"PRAGMA {pragma}")
        if query_only:
            raw.execute("PRAGMA query_only=ON")
        else:
            raw.execute(f"PRAGMA cache_size=-{WRITER_CACHE_KIB}")
            # A thread checkpoints (`Checkpointer`); the writer's own only bounds the WAL.
            raw.execute(f"PRAGMA wal_autocheckpoint={BACKSTOP_PAGES}")
        return raw

    async def _pg_pool(self) -> Any:
        loop = asyncio.get_running_loop()
        if self._pool is not None and self._pool_loop is not loop:
            # asyncpg's connections belong to the event loop that opened them, and once that
            # loop is closed they cannot even be closed cleanly.
            raise RuntimeError(
                "this database's PostgreSQL connections belong to another event loop: "
                "dispose() it in that loop before using it in another (an app disposes its "
                "database when its lifespan ends; enter a test client to run its lifespan)"
            )
        if self._pool is None:
            import asyncpg

            self._pool_loop = loop
            self._pool = await asyncpg.create_pool(
                self._conninfo,
                min_size=1,
                max_size=self.pool_size,
                init=configure_pg,
                reset=keep_session,
                statement_cache_size=PG_STATEMENT_CACHE,
            )
        return self._pool

    async def _checkout(self) -> tuple[Any, PgConnection]:
        """A connection from the pool, and its lease (`await lease.__aexit__(...)` gives it
        back)."""
        lease = (await self._pg_pool()).acquire()
        return lease, PgConnection(await lease.__aenter__())

    async def dispose(self) -> None:
        if self._checkpoints is not None:  # before the connections: the last to close checkpoints
            checkpoints, self._checkpoints = self._checkpoints, None
            checkpoints.close()
        for conn in {id(c): c for c in (self._reader, self._writer) if c is not None}.values():
            conn.raw.close()
        self._reader = self._writer = self._reads = None
        if self._pool is not None:
            await self._pool.close()
            self._pool = None


class _ReadScope:
    __slots__ = ("_database", "_lease")

    def __init__(self, database: Database) -> None:
        self._database = database
        self._lease: Any = None

    async def __aenter__(self) -> Unit:
        database = self._database
        if database.is_sqlite:
            return Unit(database._sqlite_reads(), "sqlite", writes=False)
        shared = _shared.get()
        if shared is not None and shared.database is database:
            return Unit(await shared.connection(), "postgresql", writes=False)
        self._lease, conn = await database._checkout()
        return Unit(conn, "postgresql", writes=False)

    async def __aexit__(self, *exc: Any) -> None:
        if self._lease is not None:
            await self._lease.__aexit__(*exc)


class _SharedReads:
    """The one PostgreSQL connection the units of a request share (taken from the pool at
    the first unit, given back when the request ends): the credential check and the
    handler's units cost one checkout, not one each, and a request never holds a connection
    while waiting for another (which, with many requests, would exhaust the pool). A write
    unit runs its transaction on it (units of one request run one after another)."""

    __slots__ = ("_conn", "_lease", "_token", "database")

    def __init__(self, database: Database) -> None:
        self.database = database
        self._lease: Any = None
        self._conn: PgConnection | None = None
        self._token: Any = None

    async def connection(self) -> PgConnection:
        if self._conn is None:
            self._lease, self._conn = await self.database._checkout()
        return self._conn

    async def release(self) -> None:
        """Give the connection back now; a later unit of the request takes one again."""
        if self._lease is not None:
            lease, self._lease, self._conn = self._lease, None, None
            await lease.__aexit__(None, None, None)

    async def __aenter__(self) -> None:
        self._token = _shared.set(self)

    async def __aexit__(self, *exc: Any) -> None:
        _shared.reset(self._token)
        if self._lease is not None:
            lease, self._lease, self._conn = self._lease, None, None
            await lease.__aexit__(*exc)


class _NoScope:
    async def __aenter__(self) -> None:
        return None

    async def __aexit__(self, *exc: Any) -> None:
        return None


_NO_SCOPE = _NoScope()
_shared: ContextVar[_SharedReads | None] = ContextVar("tunnelgw_shared_reads", default=None)


class _WriteScope:
    __slots__ = ("_conn", "_database", "_lease", "_member", "_unit")

    def __init__(self, database: Database) -> None:
        self._database = database
        self._lease: Any = None
        self._conn: Any = None
        self._unit: Unit | None = None
        self._member: Member | None = None  # SQLite: the unit's place in the transaction

    async def __aenter__(self) -> Unit:
        database = self._database
        if database.is_sqlite:
            self._member = await database._group.join()
            self._conn = database._sqlite(writer=True)
        else:
            shared = _shared.get()
            if shared is not None and shared.database is database:
                self._conn = await shared.connection()
            else:
                self._lease, self._conn = await database._checkout()
            try:
                await self._conn.run("BEGIN", ())
            except BaseException as exc:
                if self._lease is not None:
                    await self._lease.__aexit__(type(exc), exc, exc.__traceback__)
                raise
        self._unit = Unit(self._conn, database.dialect, writes=True)
        return self._unit

    async def __aexit__(self, kind: Any, exc: BaseException | None, tb: Any) -> None:
        assert self._unit is not None
        if self._member is not None:
            await self._database._group.leave(self._member, self._unit, exc)
            if exc is None:  # leave raised if the unit or its transaction failed
                self._unit.committed()
            return
        try:
            if exc is None:
                try:
                    await self._unit._commit_changes()
                    await self._conn.run("COMMIT", ())
                except BaseException as failure:
                    await self._rollback()
                    raise_if_conflict(failure)
                    raise
            else:
                await self._rollback()
                raise_if_conflict(exc)
        finally:
            if self._lease is not None:
                await self._lease.__aexit__(None, None, None)
        if exc is None:  # committed (a failed commit raised above)
            self._unit.committed()

    async def _rollback(self) -> None:
        # A connection that is gone cannot roll back; the pool discards it.
        with contextlib.suppress(Exception):
            await self._conn.run("ROLLBACK", ())


# The database of the app serving the current request (set by tunnelgw.http for each
# request), and the process default for code outside requests (scripts, tests).
_active: ContextVar[Database | None] = ContextVar("tunnelgw_database", default=None)
_default: Database | None = None


def init(url: str) -> Database:
    """Make a database on `url` the process default (for code outside requests: scripts,
    tests); apps hold their own (tunnelgw.http.state)."""
    return use(Database(url))


def use(database: Database) -> Database:
    """Make `database` the process default."""
    global _default
    _default = database
    return database


def activate(database: Database) -> Token[Database | None]:
    """Make `database` the current one for this task (and the tasks it starts)."""
    return _active.set(database)


def deactivate(token: Token[Database | None]) -> None:
    _active.reset(token)


def current() -> Database:
    """The database of the app serving the current request; outside a request the process
    default."""
    active = _active.get()
    if active is not None:
        return active
    if _default is None:
        raise RuntimeError("database not initialised")
    return _default


def read() -> _ReadScope:
    """`async with db.read() as unit:` on the process's database."""
    return current().read()


def request_scope() -> _SharedReads | _NoScope:
    """`async with db.request_scope():` around a request: its units share one PostgreSQL
    connection (SQLite's units use the process's connections anyway)."""
    database = current()
    return _NO_SCOPE if database.is_sqlite else _SharedReads(database)


async def release_request_connection() -> None:
    """Inside a request on PostgreSQL: give the request's connection back to the pool before
    waiting on work that needs connections of its own (the fixture loader's in-process
    requests); no-op elsewhere."""
    shared = _shared.get()
    if shared is not None:
        await shared.release()


def write() -> _WriteScope:
    """`async with db.write() as unit:` on the process's database."""
    return current().write()


def run_with(url: str, work: Callable[[Database], Awaitable[T]]) -> T:
    """Run `await work(database)` on a fresh Database for `url`, outside any event loop (the
    CLI and the fixture loader); the database is closed afterwards."""

    async def runner() -> T:
        database = Database(url)
        try:
            return await work(database)
        finally:
            await database.dispose()

    return asyncio.run(runner())
