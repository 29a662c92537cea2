"""A unit of work: the statements of one read or one transaction, on one connection. A write
unit tracks the rows it loads or adds and writes what changed at commit."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

from sqlalchemy.sql import ClauseElement

from tunnelgw.storage import records
from tunnelgw.storage.records import Record
from tunnelgw.storage.statements import Query, Result, compile_statement

T = TypeVar("T")

_LOCKS = {False: "", True: " FOR UPDATE", "share": " FOR SHARE"}

# `lock=` of Unit.get: True locks the row for this write unit (PostgreSQL `FOR UPDATE`;
# SQLite's write unit is exclusive anyway), "share" share-locks it (`FOR SHARE`).
Lock = bool | str


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
        if self.writes:
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
        as a key the database numbers). Nothing is tracked: for append-only tables."""
        self._require_write()
        if not rows:
            return
        table = records.table_sql(model, self.dialect)
        sql, encoded = table.insert_of(attrs)
        encode = self._encode
        if encoded:
            changed = []
            for row in rows:
                values = list(row)
                for i in encoded:
                    values[i] = encode(values[i])
                changed.append(values)
            rows = changed
        await self._conn.run_many(sql, rows)

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
