"""Statements for the driver: SQLAlchemy statements compiled once per dialect (`Query`), result
rows shaped into records and values, and the one placeholder convention (`%s`, numbered for
PostgreSQL by `numbered`)."""

from __future__ import annotations

import functools
import itertools
import operator
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, cast

from sqlalchemy import inspect as sa_inspect
from sqlalchemy.sql import ClauseElement
from sqlalchemy.sql.selectable import Select

from tunnelgw.storage import records


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


@dataclass(frozen=True)
class _Plan:
    """A statement compiled for one dialect."""

    sql: str
    names: tuple[str, ...] | None  # positional parameter order; None: named (`%(name)s`)
    defaults: dict[str, Any]  # the values the statement carries itself
    shape: Callable[[Sequence[Any]], Any] | None  # result row -> item; None for DML
    records: bool = False  # whether an item holds records (a write unit adopts them)


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


def compile_statement(statement: ClauseElement, dialect: str) -> _Plan:
    compiled: Any = statement.compile(
        dialect=_sa_dialect(dialect), compile_kwargs={"render_postcompile": True}
    )
    names = tuple(compiled.positiontup) if compiled.positiontup is not None else None
    if not isinstance(statement, Select):
        return _Plan(compiled.string, names, dict(compiled.params), None)
    shape, loads_records = _shape(statement, dialect)
    return _Plan(compiled.string, names, dict(compiled.params), shape, loads_records)


def _shape(statement: Select[Any], dialect: str) -> tuple[Callable[[Sequence[Any]], Any], bool]:
    """Turns a result row into what the select names: a record per entity, a decoded value
    per column; one thing alone is returned as is (like SQLModel's `exec`), several as a
    tuple (the row itself when no value needs decoding). And whether it makes records.

    Each part reads the whole row at its own position (a column: its item; an entity: the
    slice of its columns), so a row of many parts (the credential check's, on every request)
    is not cut into one slice per column."""
    decoders = records.SQLITE_DECODERS if dialect == "sqlite" else records.PG_DECODERS
    columns = list(statement.selected_columns)
    parts: list[Callable[[Sequence[Any]], Any]] = []
    plain = True  # every part a column taken as is
    loads_records = False
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
            parts.append(_entity_part(load, position, position + count))
            plain, loads_records = False, True
        else:
            count = 1
            decode = decoders.get(records.kind_of(description["type"]))
            parts.append(_column_part(decode, position))
            plain = plain and decode is None
        position += count
    if len(parts) == 1:
        return parts[0], loads_records
    if plain:
        return tuple, False
    return (lambda row: tuple([part(row) for part in parts])), loads_records


def _entity_part(
    load: Callable[[Sequence[Any]], Any], start: int, end: int
) -> Callable[[Sequence[Any]], Any]:
    return lambda row: load(row[start:end])


def _column_part(decode: Callable[[Any], Any] | None, at: int) -> Callable[[Sequence[Any]], Any]:
    if decode is None:
        return operator.itemgetter(at)
    return lambda row: None if row[at] is None else decode(row[at])


class Query:
    """A SQLAlchemy statement compiled once per dialect, on first use. Make queries at module
    level, with `bindparam("name")` for the values that vary, and run them with
    `await unit.exec(QUERY, {"name": value})` (building and compiling a statement per request
    costs milliseconds).

    `statement` may be a function that builds it, called on first use: a module that every
    server imports names a table there (`models.FaultRule`), so that importing the module
    does not import the table's (tunnelgw.models imports it when first named: a server that
    never uses the table never builds it; bench/README.md, issue 31)."""

    __slots__ = ("_build", "_plans", "_statement")

    def __init__(self, statement: ClauseElement | Callable[[], ClauseElement]) -> None:
        self._build = statement
        self._statement = statement if isinstance(statement, ClauseElement) else None
        self._plans: dict[str, _Plan] = {}

    @property
    def statement(self) -> ClauseElement:
        if self._statement is None:
            self._statement = cast(Callable[[], ClauseElement], self._build)()
        return self._statement

    def plan(self, dialect: str) -> _Plan:
        plan = self._plans.get(dialect)
        if plan is None:
            plan = self._plans[dialect] = compile_statement(self.statement, dialect)
        return plan


_MARKS = re.compile(r"%[%s]")


@functools.lru_cache(maxsize=2048)
def numbered(sql: str) -> str:
    """`sql` with its `%s` placeholders numbered for PostgreSQL (`$1`, `$2`, ...) and each
    `%%` as a literal `%`: the convention of the statements written with `unit.mark` and of
    those SQLAlchemy compiles (`_sa_dialect`)."""
    numbers = itertools.count(1)
    return _MARKS.sub(lambda m: "%" if m[0] == "%%" else f"${next(numbers)}", sql)


@functools.lru_cache(maxsize=2048)
def returns_rows(sql: str) -> bool:
    words = sql.lstrip().split(None, 1)
    first = words[0].upper() if words else ""
    return first in ("SELECT", "WITH", "VALUES", "SHOW", "TABLE") or " RETURNING " in sql.upper()
