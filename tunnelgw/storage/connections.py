"""The two drivers behind one small interface (`fetch`, `run`): stdlib sqlite3, inline on the
event loop, and asyncpg, pooled; their per-connection set-up, and how each reports a
constraint violation (409 `ERR_CONFLICT`) or a busy SQLite database (503)."""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import sys
from collections.abc import Sequence
from typing import Any

from tunnelgw.core.errors import ApiError, Code
from tunnelgw.storage import records
from tunnelgw.storage.statements import numbered, returns_rows

log = logging.getLogger("tunnelgw")

# The database holds token hashes and wrapped private keys: readable by its owner only, like
# the key-encryption key file. SQLite gives the -wal and -shm files it makes the database
# file's mode (whatever the umask).
PRIVATE_FILE_MODE = 0o600

# A request refused by contention, not by its content: worth retrying a second later.
RETRY_SOON = {"Retry-After": "1"}


def private_sqlite_file(path: str) -> None:
    """Create the SQLite database file `path` with mode 0600 unless it exists (then warn if
    other users may read it); nothing for an in-memory database."""
    if path in ("", ":memory:") or path.startswith("file:"):
        return
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, PRIVATE_FILE_MODE))
        return
    if os.stat(path).st_mode & 0o077:
        log.warning("%s is readable by other users; chmod 600 it (and its -wal, -shm)", path)


# temp_store=MEMORY: each write unit is a savepoint (tunnelgw.storage.db), whose statement
# journal then stays in memory rather than in a temporary file (~9 -> ~3 us a unit).
SQLITE_PRAGMAS = (
    "journal_mode=WAL",
    "busy_timeout=5000",
    "synchronous=NORMAL",
    "foreign_keys=ON",
    "temp_store=MEMORY",
)
# The writer connection's page cache (SQLite's default is 2 MiB a connection). Writes touch
# the right edge of each b-tree and a few index leaves; the rest of a page the writer needs is
# read from the OS's cache. A worker kept ~1.8 MiB more after the benchmark's creates with the
# default, at the same speed (bench/README.md, issue 31, fifth round).
WRITER_CACHE_KIB = 512
# Prepared statements each PostgreSQL connection keeps (asyncpg's default is 100; the API's
# statements are a few hundred).
PG_STATEMENT_CACHE = 512


class SqliteConnection:
    """A SQLite connection. `kept`: what services keep for as long as this connection lives,
    knowing what it alone wrote (see `data_version`); gone with the connection (the database
    closed or disposed)."""

    __slots__ = ("kept", "raw")

    def __init__(self, raw: sqlite3.Connection) -> None:
        self.raw = raw
        self.kept: dict[str, Any] = {}

    def data_version(self) -> int:
        """SQLite's `PRAGMA data_version`: it changes when another connection (of this
        process or another) commits to the database, never for this connection's own commits.
        One call costs ~1 us."""
        version: int = self.raw.execute("PRAGMA data_version").fetchone()[0]
        return version

    async def fetch(self, sql: str, args: Sequence[Any]) -> list[Any]:
        return self.raw.execute(sql, args).fetchall()

    async def run(self, sql: str, args: Any) -> tuple[list[Any], int]:
        cursor = self.raw.execute(sql, args)
        return cursor.fetchall(), cursor.rowcount

    async def run_many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        self.raw.executemany(sql, rows)


class SqliteReads:
    """What a SQLite read unit runs its statements on. A query runs on the writer connection
    while that has no transaction open, else on the `query_only` reader. SQLite drops a
    connection's whole page cache once another connection has committed: after each write of
    this process (a request journal entry's commit before each answer, say) the reader would
    read again, from the file, the pages of every table a request touches (~10 `pread`s a
    GET), which the writer's cache still holds. Outside a transaction the writer sees what
    the reader would: what is committed. Other statements (`run`, `run_many`: writes, text)
    go to the reader, whose `query_only` refuses any write (bench/README.md, issue 31)."""

    __slots__ = ("reader", "writer")

    def __init__(self, reader: SqliteConnection, writer: SqliteConnection) -> None:
        self.reader = reader
        self.writer = writer

    async def fetch(self, sql: str, args: Sequence[Any]) -> list[Any]:
        conn = self.reader if self.writer.raw.in_transaction else self.writer
        return await conn.fetch(sql, args)

    async def run(self, sql: str, args: Any) -> tuple[list[Any], int]:
        return await self.reader.run(sql, args)

    async def run_many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        await self.reader.run_many(sql, rows)


class PgConnection:
    """A pooled asyncpg connection. asyncpg prepares each statement once per connection and
    keeps it (`statement_cache_size`), so a statement costs one round trip."""

    __slots__ = ("raw",)

    def __init__(self, raw: Any) -> None:
        self.raw = raw

    async def fetch(self, sql: str, args: Sequence[Any]) -> list[Any]:
        return await self.raw.fetch(numbered(sql), *args)  # type: ignore[no-any-return]

    async def run(self, sql: str, args: Sequence[Any]) -> tuple[list[Any], int]:
        sql = numbered(sql)
        if returns_rows(sql):
            rows = await self.raw.fetch(sql, *args)
            return rows, len(rows)
        # `INSERT 0 1`, `UPDATE 2`, `DELETE 0`, `BEGIN`: the count of changed rows is last.
        status: str = await self.raw.execute(sql, *args)
        count = status.rpartition(" ")[2]
        return [], int(count) if count.isdigit() else -1

    async def run_many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        await self.raw.executemany(numbered(sql), rows)


async def configure_pg(conn: Any) -> None:
    """JSON columns in and out as Python values (orjson), like SQLite's."""
    for name in ("json", "jsonb"):
        await conn.set_type_codec(
            name, schema="pg_catalog", encoder=records.json_text, decoder=records.json_value
        )


async def keep_session(_conn: Any) -> None:
    """A connection given back to the pool keeps its session (its prepared statements above
    all): the server sets no session state, and an open transaction was already rolled back
    by asyncpg. asyncpg's own reset (`RESET ALL`, `UNLISTEN *`, ...) would cost a round trip
    per request."""


def begin_immediate(raw: sqlite3.Connection) -> None:
    try:
        raw.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError as exc:
        raise ApiError(
            Code.SERVICE_UNAVAILABLE,
            f"The database is busy ({exc}); retry the request.",
            headers=RETRY_SOON,
        ) from exc


def raise_if_conflict(exc: BaseException) -> None:
    """Raise ApiError from `exc` when it is what a concurrent change caused, so the request
    may succeed when retried: a constraint violation (409 ERR_CONFLICT), or PostgreSQL
    aborting the transaction to break a deadlock with another (503 ERR_SERVICE_UNAVAILABLE,
    `Retry-After: 1`, as SQLite's `busy_timeout` expiring is). Nothing of the unit was
    written either way."""
    if _is_integrity_error(exc):
        message = "The request conflicts with a concurrent change; retry it."
        raise ApiError(Code.CONFLICT, message) from exc
    if _is_rolled_back(exc):
        raise ApiError(
            Code.SERVICE_UNAVAILABLE,
            "The database aborted the request's transaction to break a deadlock with a "
            "concurrent one; nothing was written; retry the request.",
            headers=RETRY_SOON,
        ) from exc


def _is_rolled_back(exc: BaseException) -> bool:
    """Whether `exc` is PostgreSQL's abort of a transaction (class 40: a deadlock, a
    serialization failure)."""
    return _is_asyncpg_error(exc, "TransactionRollbackError")


def _is_integrity_error(exc: BaseException) -> bool:
    if isinstance(exc, sqlite3.IntegrityError):
        return True
    return _is_asyncpg_error(exc, "IntegrityConstraintViolationError")


def _is_asyncpg_error(exc: BaseException, name: str) -> bool:
    """Whether `exc` is asyncpg's exception class `name` (asyncpg is loaded only where
    PostgreSQL is used: an error of a process without it is none of asyncpg's)."""
    asyncpg = sys.modules.get("asyncpg")
    return asyncpg is not None and isinstance(exc, getattr(asyncpg, name))
