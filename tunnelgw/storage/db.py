"""The database: units of work over one connection, SQL run directly on the driver.

`read()` and `write()` are the only ways handlers touch the database; both give a `Unit`.

- **SQLite** (stdlib `sqlite3`) runs inline on the event loop: a statement takes
  microseconds, far less than a hop to a helper thread. Each process has one connection for
  reads (autocommit, `query_only`; every statement reads its own consistent snapshot) and one
  for writes. Write units are serialised per process by an asyncio lock and begin with
  `BEGIN IMMEDIATE`, so writers of several processes queue in SQLite's busy handler
  (`busy_timeout`) rather than fail; WAL lets readers go on meanwhile.
- **PostgreSQL** (asyncpg: native asyncio, binary protocol, each connection keeps its
  prepared statements) takes connections from asyncpg's pool: reads in autocommit (one
  round trip per statement), writes in one transaction. Statements reach the connection in
  one convention, `%s` placeholders and `%%` for a literal `%` (`unit.mark`; SQLAlchemy
  compiles in it too), and are numbered (`$1`, `$2`, ...) for the driver there.

A write unit commits when its block succeeds and rolls back on any exception, so a failed
request never leaves a half-written row; a constraint violation (a concurrent request got
there first) becomes 409 `ERR_CONFLICT`. Rows are records (tunnelgw.storage.records); statements are
the generated per-table SQL, SQLAlchemy statements compiled once per dialect (`Query`), or,
on rare paths, SQLAlchemy statements compiled per call.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import re
import sqlite3
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextvars import ContextVar, Token
from dataclasses import dataclass
from typing import Any, TypeVar

from sqlalchemy import inspect as sa_inspect
from sqlalchemy.engine import make_url
from sqlalchemy.sql import ClauseElement
from sqlalchemy.sql.selectable import Select

from tunnelgw.core.errors import ApiError, Code
from tunnelgw.storage import records
from tunnelgw.storage.records import Record

T = TypeVar("T")

SQLITE_PRAGMAS = ("journal_mode=WAL", "busy_timeout=5000", "synchronous=NORMAL", "foreign_keys=ON")
# PostgreSQL connections per worker process (the default of `database_pool_size`): fewer
# than the requests in flight and requests queue for one (bench/README: 10 -> 32 gave +13% of
# GET throughput at 32 connections); opened on demand from one.
POOL_MAX_SIZE = 32
# Prepared statements each PostgreSQL connection keeps (asyncpg's default is 100; the API's
# statements are a few hundred).
PG_STATEMENT_CACHE = 512
_LOCKS = {False: "", True: " FOR UPDATE", "share": " FOR SHARE"}

# `lock=` of Unit.get: True locks the row for this write unit (PostgreSQL `FOR UPDATE`;
# SQLite's write unit is exclusive anyway), "share" share-locks it (`FOR SHARE`).
Lock = bool | str


class Result:
    """The rows of one statement (already fetched), and the number of rows it changed."""

    __slots__ = ("rowcount", "rows")

    def __init__(self, rows: list[Any], rowcount: int = -1) -> None:
        self.rows = rows
        self.rowcount = rowcount

    def __iter__(self) -> Iterator[Any]:
        return iter(self.rows)

    def all(self) -> list[Any]:
        return self.rows

    def first(self) -> Any:
        return self.rows[0] if self.rows else None

    def one_or_none(self) -> Any:
        if len(self.rows) > 1:
            raise LookupError(f"expected at most one row, got {len(self.rows)}")
        return self.first()

    def one(self) -> Any:
        if len(self.rows) != 1:
            raise LookupError(f"expected one row, got {len(self.rows)}")
        return self.rows[0]


# --- statements ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _Plan:
    """A statement compiled for one dialect."""

    sql: str
    names: tuple[str, ...] | None  # positional parameter order; None: named (`%(name)s`)
    defaults: dict[str, Any]  # the values the statement carries itself
    shape: Callable[[Sequence[Any]], Any] | None  # result row -> item; None for DML


@functools.cache
def _sa_dialect(name: str) -> Any:
    """SQLAlchemy's dialect that compiles statements for `name` (imported on first use: a
    SQLite server never loads the PostgreSQL dialect)."""
    if name == "sqlite":
        from sqlalchemy.dialects import sqlite

        return sqlite.dialect()
    from sqlalchemy.dialects.postgresql import asyncpg

    # `%s` placeholders and `%%` for a literal `%`, like the statements written by hand: one
    # convention for `_PgConnection` to number.
    return asyncpg.dialect(paramstyle="format")  # type: ignore[no-untyped-call]


def _compile(statement: ClauseElement, dialect: str) -> _Plan:
    compiled: Any = statement.compile(
        dialect=_sa_dialect(dialect), compile_kwargs={"render_postcompile": True}
    )
    names = tuple(compiled.positiontup) if compiled.positiontup is not None else None
    shape = _shape(statement, dialect) if isinstance(statement, Select) else None
    return _Plan(compiled.string, names, dict(compiled.params), shape)


def _shape(statement: Select[Any], dialect: str) -> Callable[[Sequence[Any]], Any]:
    """Turns a result row into what the select names: a record per entity, a decoded value
    per column; one thing alone is returned as is (like SQLModel's `exec`), several as a
    tuple."""
    decoders = records.SQLITE_DECODERS if dialect == "sqlite" else records.PG_DECODERS
    columns = list(statement.selected_columns)
    parts: list[tuple[int, int, Callable[[Sequence[Any]], Any]]] = []
    position = 0
    for description in statement.column_descriptions:
        entity, expr = description.get("entity"), description.get("expr")
        if entity is not None and expr is entity:
            mapper = sa_inspect(entity)
            count = len(mapper.column_attrs)
            taken = columns[position : position + count]
            attrs = [mapper.get_property_by_column(column).key for column in taken]
            kinds = [records.kind_of(column.type) for column in taken]
            load = records.loader(records.record_class(entity), attrs, kinds, decoders)
        else:
            count = 1
            decode = decoders.get(records.kind_of(description["type"]))
            load = _value_loader(decode)
        parts.append((position, position + count, load))
        position += count
    if len(parts) == 1:
        start, end, load = parts[0]
        return lambda row: load(row[start:end])
    return lambda row: tuple(load(row[start:end]) for start, end, load in parts)


def _value_loader(decode: Callable[[Any], Any] | None) -> Callable[[Sequence[Any]], Any]:
    if decode is None:
        return lambda row: row[0]
    return lambda row: None if row[0] is None else decode(row[0])


class Query:
    """A SQLAlchemy statement compiled once per dialect, on first use. Make queries at module
    level, with `bindparam("name")` for the values that vary, and run them with
    `await unit.exec(QUERY, {"name": value})` (building and compiling a statement per request
    costs milliseconds)."""

    __slots__ = ("_plans", "statement")

    def __init__(self, statement: ClauseElement) -> None:
        self.statement = statement
        self._plans: dict[str, _Plan] = {}

    def plan(self, dialect: str) -> _Plan:
        plan = self._plans.get(dialect)
        if plan is None:
            plan = self._plans[dialect] = _compile(self.statement, dialect)
        return plan


# --- connections --------------------------------------------------------------------------


class _SqliteConnection:
    __slots__ = ("raw",)

    def __init__(self, raw: sqlite3.Connection) -> None:
        self.raw = raw

    async def fetch(self, sql: str, args: Sequence[Any]) -> list[Any]:
        return self.raw.execute(sql, args).fetchall()

    async def run(self, sql: str, args: Any) -> tuple[list[Any], int]:
        cursor = self.raw.execute(sql, args)
        return cursor.fetchall(), cursor.rowcount


class _PgConnection:
    """A pooled asyncpg connection. asyncpg prepares each statement once per connection and
    keeps it (`statement_cache_size`), so a statement costs one round trip."""

    __slots__ = ("raw",)

    def __init__(self, raw: Any) -> None:
        self.raw = raw

    async def fetch(self, sql: str, args: Sequence[Any]) -> list[Any]:
        return await self.raw.fetch(numbered(sql), *args)  # type: ignore[no-any-return]

    async def run(self, sql: str, args: Sequence[Any]) -> tuple[list[Any], int]:
        sql = numbered(sql)
        if _returns_rows(sql):
            rows = await self.raw.fetch(sql, *args)
            return rows, len(rows)
        # `INSERT 0 1`, `UPDATE 2`, `DELETE 0`, `BEGIN`: the count of changed rows is last.
        status: str = await self.raw.execute(sql, *args)
        count = status.rpartition(" ")[2]
        return [], int(count) if count.isdigit() else -1


_MARKS = re.compile(r"%[%s]")


@functools.lru_cache(maxsize=2048)
def numbered(sql: str) -> str:
    """`sql` with its `%s` placeholders numbered for PostgreSQL (`$1`, `$2`, ...) and each
    `%%` as a literal `%`: the convention of the statements written with `unit.mark` and of
    those SQLAlchemy compiles (`_sa_dialect`)."""
    numbers = itertools.count(1)
    return _MARKS.sub(lambda m: "%" if m[0] == "%%" else f"${next(numbers)}", sql)


@functools.lru_cache(maxsize=2048)
def _returns_rows(sql: str) -> bool:
    words = sql.lstrip().split(None, 1)
    first = words[0].upper() if words else ""
    return first in ("SELECT", "WITH", "VALUES", "SHOW", "TABLE") or " RETURNING " in sql.upper()


# --- units of work ------------------------------------------------------------------------


class Unit:
    """The statements of one unit of work, on one connection (see the module docstring).

    A write unit tracks the rows it loads or adds: at commit it inserts the added ones and
    updates the columns changed on the loaded ones (rows are plain records; assign a new
    list or dict to a JSON column rather than changing it in place).
    """

    __slots__ = ("_conn", "_encode", "_pending", "_tracked", "dialect", "writes")

    def __init__(self, conn: Any, dialect: str, *, writes: bool) -> None:
        self._conn = conn
        self.dialect = dialect
        self.writes = writes
        self._encode = records.encode_sqlite if dialect == "sqlite" else records.encode_pg
        self._pending: list[Record] = []
        self._tracked: dict[tuple[type, tuple[Any, ...]], tuple[Record, tuple[Any, ...]]] = {}

    async def get(self, model: type[T], key: Any, *, lock: Lock = False) -> T | None:
        """The row of `model` with primary key `key` (a tuple for composite keys), or None.
        In a write unit, a row already loaded is returned as is."""
        key = key if isinstance(key, tuple) else (key,)
        if self.writes and (model, key) in self._tracked:
            return self._tracked[(model, key)][0]  # type: ignore[return-value]
        table = records.table_sql(model, self.dialect)  # type: ignore[arg-type]
        sql = table.by_pk + _LOCKS[lock] if self.dialect == "postgresql" else table.by_pk
        rows = await self._conn.fetch(sql, key)
        if not rows:
            return None
        row = table.load(rows[0])
        if self.writes:
            self._track(row)
        return row  # type: ignore[no-any-return]

    async def select(self, model: type[T], condition: str, args: Sequence[Any]) -> list[T]:
        """The rows of `model` matching `condition`, SQL over the table's quoted column names
        with the dialect's placeholder `unit.mark` (hot paths: no statement to compile)."""
        table = records.table_sql(model, self.dialect)  # type: ignore[arg-type]
        rows = await self._conn.fetch(table.where(condition), args)
        loaded = [table.load(row) for row in rows]
        if self.writes:
            for row in loaded:
                self._track(row)
        return loaded

    async def select_rows(
        self, model: type[Any], condition: str, args: Sequence[Any]
    ) -> list[tuple[Any, ...]]:
        """The result rows of `select` as the driver returns them (tuples of the stored
        values, in table column order), not loaded; `records.table_sql(model, unit.dialect)
        .load` makes a record of one. Read units only (a write unit tracks what it loads)."""
        if self.writes:
            raise RuntimeError("select_rows is for read units; use select")
        table = records.table_sql(model, self.dialect)
        rows: list[tuple[Any, ...]] = await self._conn.fetch(table.where(condition), args)
        return rows

    async def select_in(self, model: type[T], column: str, values: Sequence[Any]) -> list[T]:
        """The rows of `model` whose `column` is one of `values` (the related rows of a page,
        in one statement); none for no values."""
        if not values:
            return []
        if self.dialect == "postgresql":  # one statement (prepared once) for any count
            return await self.select(model, f'"{column}" = ANY({self.mark})', [list(values)])
        marks = ", ".join([self.mark] * len(values))
        return await self.select(model, f'"{column}" IN ({marks})', values)

    @property
    def mark(self) -> str:
        """The dialect's parameter placeholder (`?` or `%s`)."""
        return "?" if self.dialect == "sqlite" else "%s"

    async def exec(
        self, statement: ClauseElement | Query, params: dict[str, Any] | None = None
    ) -> Result:
        """Run a SQLAlchemy statement (a `Query`, or a statement compiled for this call)."""
        plan = (
            statement.plan(self.dialect)
            if isinstance(statement, Query)
            else _compile(statement, self.dialect)
        )
        values = {**plan.defaults, **params} if params else plan.defaults
        encode = self._encode
        args: Any
        if plan.names is not None:
            args = tuple(encode(values[name]) for name in plan.names)
        else:
            args = {name: encode(value) for name, value in values.items()}
        if plan.shape is None:  # DML or text: rows as tuples
            await self.flush()
            rows, rowcount = await self._conn.run(plan.sql, args)
            return Result([tuple(row) for row in rows], rowcount)
        rows = await self._conn.fetch(plan.sql, args)
        items = [plan.shape(row) for row in rows]
        if self.writes:
            for item in items:
                for part in item if isinstance(item, tuple) else (item,):
                    if isinstance(part, Record):
                        self._track(part)
        return Result(items)

    def add(self, row: Any) -> None:
        """Insert `row` at the next flush (at the latest, at commit)."""
        self._require_write()
        self._pending.append(row)

    def add_all(self, rows: Sequence[Any]) -> None:
        for row in rows:
            self.add(row)

    async def flush(self) -> None:
        """Insert the rows added so far."""
        pending, self._pending = self._pending, []
        for row in pending:
            table = records.table_sql(row.__model__, self.dialect)
            await self._conn.run(table.insert, tuple(map(self._encode, records.values_of(row))))
            self._track(row)

    async def delete(self, row: Any) -> None:
        """Delete `row` now."""
        self._require_write()
        await self.flush()
        key = records.primary_key(row)
        table = records.table_sql(row.__model__, self.dialect)
        await self._conn.run(table.delete, key)
        self._tracked.pop((row.__model__, key), None)

    async def _commit_changes(self) -> None:
        await self.flush()
        for (model, key), (row, before) in self._tracked.items():
            after = records.values_of(row)
            if after == before:
                continue
            table = records.table_sql(model, self.dialect)
            changed = [
                i
                for i, (a, b) in enumerate(zip(after, before, strict=True))
                if a is not b and a != b
            ]
            attrs = tuple(row.__columns__[i] for i in changed)
            args = (*(self._encode(after[i]) for i in changed), *key)
            await self._conn.run(table.update(attrs), args)

    def _track(self, row: Record) -> None:
        key = records.primary_key(row)
        self._tracked[(row.__model__, key)] = (row, records.values_of(row))

    def _require_write(self) -> None:
        if not self.writes:
            raise RuntimeError("a read unit cannot write; use db.write()")


# --- the database -------------------------------------------------------------------------


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
        self._reader: _SqliteConnection | None = None
        self._writer: _SqliteConnection | None = None
        self._write_lock = asyncio.Lock()
        self._pool: Any = None
        self._pool_loop: asyncio.AbstractEventLoop | None = None

    def read(self) -> _ReadScope:
        """`async with database.read() as unit:` statements outside a transaction."""
        return _ReadScope(self)

    def write(self) -> _WriteScope:
        """`async with database.write() as unit:` one transaction, committed on success."""
        return _WriteScope(self)

    def _sqlite(self, *, writer: bool) -> _SqliteConnection:
        if self._writer is None:
            self._writer = _SqliteConnection(self._connect(query_only=False))
            memory = self._path in ("", ":memory:")
            self._reader = self._writer if memory else _SqliteConnection(self._connect(True))
        return self._writer if writer else self._reader  # type: ignore[return-value]

    def _connect(self, query_only: bool) -> sqlite3.Connection:
        raw = sqlite3.connect(
            self._path, isolation_level=None, check_same_thread=False, cached_statements=512
        )
        for pragma in SQLITE_PRAGMAS:
            raw.execute(f"PRAGMA {pragma}")
        if query_only:
            raw.execute("PRAGMA query_only=ON")
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
                init=_configure_pg,
                reset=_keep_session,
                statement_cache_size=PG_STATEMENT_CACHE,
            )
        return self._pool

    async def _checkout(self) -> tuple[Any, _PgConnection]:
        """A connection from the pool, and its lease (`await lease.__aexit__(...)` gives it
        back)."""
        lease = (await self._pg_pool()).acquire()
        return lease, _PgConnection(await lease.__aenter__())

    async def dispose(self) -> None:
        for conn in {id(c): c for c in (self._reader, self._writer) if c is not None}.values():
            conn.raw.close()
        self._reader = self._writer = None
        if self._pool is not None:
            await self._pool.close()
            self._pool = None


async def _configure_pg(conn: Any) -> None:
    """JSON columns in and out as Python values (orjson), like SQLite's."""
    for name in ("json", "jsonb"):
        await conn.set_type_codec(
            name, schema="pg_catalog", encoder=records.json_text, decoder=records.json_value
        )


async def _keep_session(_conn: Any) -> None:
    """A connection given back to the pool keeps its session (its prepared statements above
    all): the server sets no session state, and an open transaction was already rolled back
    by asyncpg. asyncpg's own reset (`RESET ALL`, `UNLISTEN *`, ...) would cost a round trip
    per request."""


class _ReadScope:
    __slots__ = ("_database", "_lease")

    def __init__(self, database: Database) -> None:
        self._database = database
        self._lease: Any = None

    async def __aenter__(self) -> Unit:
        database = self._database
        if database.is_sqlite:
            return Unit(database._sqlite(writer=False), "sqlite", writes=False)
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
        self._conn: _PgConnection | None = None
        self._token: Any = None

    async def connection(self) -> _PgConnection:
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
    __slots__ = ("_conn", "_database", "_lease", "_unit")

    def __init__(self, database: Database) -> None:
        self._database = database
        self._lease: Any = None
        self._conn: Any = None
        self._unit: Unit | None = None

    async def __aenter__(self) -> Unit:
        database = self._database
        if database.is_sqlite:
            await database._write_lock.acquire()
            try:
                self._conn = database._sqlite(writer=True)
                _begin_immediate(self._conn.raw)
            except BaseException:
                database._write_lock.release()
                raise
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
        try:
            if exc is None:
                try:
                    await self._unit._commit_changes()
                    await self._conn.run("COMMIT", ())
                except BaseException as failure:
                    await self._rollback()
                    conflict = _conflict_or(failure)
                    if conflict is failure:
                        raise
                    raise conflict from failure
            else:
                await self._rollback()
                conflict = _conflict_or(exc)
                if conflict is not exc:
                    raise conflict from exc
        finally:
            if self._database.is_sqlite:
                self._database._write_lock.release()
            elif self._lease is not None:
                await self._lease.__aexit__(None, None, None)

    async def _rollback(self) -> None:
        # A connection that is gone cannot roll back; the pool discards it.
        with contextlib.suppress(Exception):
            await self._conn.run("ROLLBACK", ())


def _begin_immediate(raw: sqlite3.Connection) -> None:
    try:
        raw.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError as exc:
        raise ApiError(
            Code.SERVICE_UNAVAILABLE, f"The database is busy ({exc}); retry the request."
        ) from exc


def _conflict_or(exc: BaseException) -> BaseException:
    """ApiError(409 ERR_CONFLICT) for a constraint violation, else `exc` itself."""
    if _is_integrity_error(exc):
        return ApiError(Code.CONFLICT, "The request conflicts with a concurrent change; retry it.")
    return exc


def _is_integrity_error(exc: BaseException) -> bool:
    if isinstance(exc, sqlite3.IntegrityError):
        return True
    import asyncpg

    return isinstance(exc, asyncpg.IntegrityConstraintViolationError)


# --- the process's database ---------------------------------------------------------------

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
