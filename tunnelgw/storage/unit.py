"""A unit of work: the statements of one read or one transaction, on one connection. A write
unit tracks the rows it loads or adds and writes what changed at commit, telling the change
observer of its context (`observing`) what it created, updated and deleted."""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Callable, Iterator, Sequence
from contextvars import ContextVar
from typing import Any, Protocol, TypeVar

from sqlalchemy.sql import ClauseElement

from tunnelgw.storage import records
from tunnelgw.storage.records import Record
from tunnelgw.storage.statements import Query, Result, compile_statement

T = TypeVar("T")

_LOCKS = {False: "", True: " FOR UPDATE", "no key": " FOR NO KEY UPDATE", "share": " FOR SHARE"}

# `lock=` of Unit.get: True locks the row for this write unit (PostgreSQL `FOR UPDATE`;
# SQLite's write unit is exclusive anyway), "share" share-locks it (`FOR SHARE`). "no key"
# locks it for a change of columns no foreign key refers to (`FOR NO KEY UPDATE`): units that
# insert rows referring to it (each holding `FOR KEY SHARE` on it) neither wait for it nor make
# it wait, so a unit that did insert such rows can take it without deadlocking with another.
Lock = bool | str


class Changes:
    """What a write unit changed through its own methods, net: a row created then updated is
    created, one created then deleted is nothing. `deleted` holds each deleted row with what
    the observer's `deleting` returned for it (taken before the row went)."""

    __slots__ = ("created", "deleted", "updated")

    def __init__(
        self, created: list[Record], updated: list[Record], deleted: list[tuple[Record, Any]]
    ) -> None:
        self.created = created
        self.updated = updated
        self.deleted = deleted


class ChangeObserver(Protocol):
    """Told of a write unit's changes, in the unit's transaction (a higher layer implements
    it: the events that changes fire). Rows changed by statements (`Unit.exec`: bulk or
    cascading deletes) are not seen."""

    def watches(self, model: type) -> bool:
        """Whether rows of `model` matter (others are not tracked for it)."""
        ...

    async def deleting(self, unit: Unit, row: Record) -> Any:
        """Called before `row` is deleted (its related rows still there); the result is kept
        with the row in `Changes.deleted`."""
        ...

    async def changed(self, unit: Unit, changes: Changes) -> None:
        """Called once before commit, after every change was written; may add rows."""
        ...


# The observer of the write units started in this context (set per request by the HTTP layer;
# None: changes are seen by nobody, e.g. rows a fixture writes directly).
_observer: ContextVar[ChangeObserver | None] = ContextVar("tunnelgw_change_observer", default=None)


def observer() -> ChangeObserver | None:
    return _observer.get()


@contextlib.contextmanager
def observing(watcher: ChangeObserver | None) -> Iterator[None]:
    """Make `watcher` the observer of the write units started inside (None: unobserved)."""
    token = _observer.set(watcher)
    try:
        yield
    finally:
        _observer.reset(token)


def set_observer(watcher: ChangeObserver | None) -> Any:
    """Make `watcher` the observer for this task (a request); the token resets it."""
    return _observer.set(watcher)


def reset_observer(token: Any) -> None:
    _observer.reset(token)


class Unit:
    """The statements of one unit of work, on one connection (see the module docstring).

    A write unit tracks the rows it loads or adds: at commit it inserts the added ones and
    updates the columns changed on the loaded ones (rows are plain records; assign a new
    list or dict to a JSON column rather than changing it in place).
    """

    __slots__ = (
        "_after",
        "_conn",
        "_created",
        "_deleted",
        "_encode",
        "_observer",
        "_pending",
        "_tracked",
        "dialect",
        "writes",
    )

    def __init__(self, conn: Any, dialect: str, *, writes: bool) -> None:
        self._conn = conn
        self.dialect = dialect
        self.writes = writes
        self._encode = records.encode_sqlite if dialect == "sqlite" else records.encode_pg
        self._pending: list[Record] = []
        self._tracked: dict[tuple[type, tuple[Any, ...]], tuple[Record, tuple[Any, ...]]] = {}
        # Only a write unit with an observer keeps what it created and deleted.
        self._observer = _observer.get() if writes else None
        self._created: dict[tuple[type, tuple[Any, ...]], Record] = {}
        self._deleted: list[tuple[Record, Any]] = []
        self._after: list[Callable[[], None]] | None = None  # made by the first after_commit

    def after_commit(self, action: Callable[[], None]) -> None:
        """Call `action` once this write unit has committed (not when it fails or rolls back,
        nor when the transaction it shares fails to commit)."""
        self._require_write()
        if self._after is None:
            self._after = []
        self._after.append(action)

    def committed(self) -> None:
        """The unit committed: its `after_commit` actions run (the write scope calls this)."""
        actions, self._after = self._after, None
        for action in actions or ():
            action()

    def kept(self) -> dict[str, Any] | None:
        """For a SQLite write unit, what services keep with its connection, for as long as it
        lives (`SqliteConnection.kept`; whether another connection committed meanwhile:
        `data_version`); None on PostgreSQL, whose write units run on many connections."""
        self._require_write()
        return self._conn.kept if self.dialect == "sqlite" else None

    def data_version(self) -> int:
        """A SQLite write unit's connection's `data_version`: it changes when another
        connection commits, never for this one's own commits."""
        version: int = self._conn.data_version()
        return version

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
            loaded = [self._adopt(row) for row in loaded]
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
            else compile_statement(statement, self.dialect)
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
        if self.writes and plan.records:
            items = [
                tuple(self._adopt(p) if isinstance(p, Record) else p for p in item)
                if isinstance(item, tuple)
                else self._adopt(item)
                if isinstance(item, Record)
                else item
                for item in items
            ]
        return Result(items)

    def add(self, row: Any) -> None:
        """Insert `row` at the next flush (at the latest, at commit)."""
        self._require_write()
        self._pending.append(row)

    def add_all(self, rows: Sequence[Any]) -> None:
        for row in rows:
            self.add(row)

    async def insert_many(
        self, model: type[Any], attrs: tuple[str, ...], rows: Sequence[Sequence[Any]]
    ) -> None:
        """Insert `rows`, each the values of the columns `attrs` in that order, in one
        statement run for every row (the columns left out take their database defaults, such
        as a key the database numbers); a value that consecutive rows share (the same object)
        is encoded once. Nothing is tracked: for append-only tables."""
        self._require_write()
        if not rows:
            return
        table = records.table_sql(model, self.dialect)
        sql, encoding = table.insert_of(attrs)
        if encoding:
            rows = records.encode_rows(rows, encoding)
        await self._conn.run_many(sql, rows)

    async def flush(self) -> None:
        """Insert the rows added so far, in the order added: consecutive rows of one table in
        one statement (executemany: the deliveries of an event, say)."""
        pending, self._pending = self._pending, []
        watcher = self._observer
        for model, group in itertools.groupby(pending, key=lambda row: row.__model__):
            rows = list(group)
            table = records.table_sql(model, self.dialect)
            values = [tuple(map(self._encode, records.values_of(row))) for row in rows]
            if len(values) == 1:
                await self._conn.run(table.insert, values[0])
            else:
                await self._conn.run_many(table.insert, values)
            watched = watcher is not None and watcher.watches(model)
            for row in rows:
                self._track(row)
                if watched:
                    self._created[(model, records.primary_key(row))] = row

    async def delete(self, row: Any) -> None:
        """Delete `row` now."""
        self._require_write()
        await self.flush()
        key = records.primary_key(row)
        table = records.table_sql(row.__model__, self.dialect)
        watcher = self._observer
        # A row created here then deleted: nothing happened.
        if (
            watcher is not None
            and watcher.watches(row.__model__)
            and self._created.pop((row.__model__, key), None) is None
        ):
            self._deleted.append((row, await watcher.deleting(self, row)))
        await self._conn.run(table.delete, key)
        self._tracked.pop((row.__model__, key), None)

    async def _commit_changes(self) -> None:
        updated = await self._write_changes()
        watcher = self._observer
        if watcher is None:
            return
        watched = [row for row in updated if watcher.watches(row.__model__)]
        if self._created or watched or self._deleted:
            changes = Changes(list(self._created.values()), watched, self._deleted)
            self._observer = None  # what the observer writes is not observed
            await watcher.changed(self, changes)
            await self._write_changes()

    async def _write_changes(self) -> list[Record]:
        """Insert the added rows and update the changed columns of the loaded ones (each
        update is then the row's new baseline); the rows updated that were not created."""
        await self.flush()
        updated: list[Record] = []
        for tracked_key, (row, before) in self._tracked.items():
            after = records.values_of(row)
            if after == before:
                continue
            model, key = tracked_key
            self._tracked[tracked_key] = (row, after)
            if tracked_key not in self._created:
                updated.append(row)
            table = records.table_sql(model, self.dialect)
            changed = [
                i
                for i, (a, b) in enumerate(zip(after, before, strict=True))
                if a is not b and a != b
            ]
            attrs = tuple(row.__columns__[i] for i in changed)
            args = (*(self._encode(after[i]) for i in changed), *key)
            await self._conn.run(table.update(attrs), args)
        return updated

    def _adopt(self, row: Any) -> Any:
        """The unit's own record of `row`'s key when it holds one already (with the changes
        made to it since), else `row`, tracked from now on: one record per row in a unit."""
        key = records.primary_key(row)
        held = self._tracked.get((row.__model__, key))
        if held is not None:
            return held[0]
        self._track(row)
        return row

    def _track(self, row: Record) -> None:
        key = records.primary_key(row)
        self._tracked[(row.__model__, key)] = (row, records.values_of(row))

    def _require_write(self) -> None:
        if not self.writes:
            raise RuntimeError("a read unit cannot write; use db.write()")
