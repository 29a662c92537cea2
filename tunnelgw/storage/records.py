"""Rows as plain records, and the SQL each table needs, built from the SQLModel tables.

The SQLModel classes in `models/` are the schema (tables, columns, indexes, migrations) and
declare each table's behaviour (`to_api()`, helpers). At run time a row is a *record*: an
instance of a plain slotted class with the table's columns as attributes and the model's own
methods, properties and class constants copied from the classes of the `models` package in its
MRO. Records carry none of SQLAlchemy's instrumentation, so reading an attribute is a plain slot
read: the ORM's descriptors and instance construction cost ~30x more per row than the query
(see bench/README.md), which is why the server does not use the ORM at run time.

`record_class(Model)` is the record class (made once); `Model.new(...)` makes a new row with
the field defaults; `TableSql` holds the generated SQL of one table for one dialect.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from types import FunctionType
from typing import Any

import orjson
from pydantic_core import PydanticUndefined
from sqlalchemy import JSON, Boolean, DateTime, inspect
from sqlmodel import SQLModel

from tunnelgw.core import timefmt

Decoder = Callable[[Any], Any]
Encoder = Callable[[Any], Any]
Encoding = tuple[tuple[int, Encoder], ...]  # (position, encoder) of the values to encode

# Behaviour is copied only from classes defined in these packages (not SQLModel's, pydantic's
# or SQLAlchemy's machinery).
_MODEL_PACKAGES = ("tunnelgw.models",)


class Record:
    """Base of every record class: a row of one table (see the module docstring)."""

    __slots__ = ()
    __model__: type[SQLModel]
    __columns__: tuple[str, ...]
    __values__: Callable[[Record], tuple[Any, ...]]  # the column values, in order

    def __init__(self, **values: Any) -> None:
        spec = _spec(type(self).__model__)
        unknown = values.keys() - spec.attrs
        if unknown:
            raise TypeError(f"{type(self).__name__} has no column {sorted(unknown)[0]!r}")
        for name in spec.attrs:
            if name in values:
                setattr(self, name, values[name])
            elif name in spec.defaults:
                setattr(self, name, spec.defaults[name]())
            else:
                raise TypeError(f"{type(self).__name__} needs a value for {name!r}")

    def __repr__(self) -> str:
        pairs = ", ".join(f"{name}={getattr(self, name, None)!r}" for name in self.__columns__)
        return f"{type(self).__name__}({pairs})"

    def __eq__(self, other: object) -> bool:  # also makes records unhashable (mutable)
        if type(other) is not type(self):
            return NotImplemented
        return values_of(self) == values_of(other)


@dataclass(frozen=True)
class _Spec:
    """What the record machinery knows about one table."""

    model: type[SQLModel]
    table: str
    attrs: tuple[str, ...]  # column attributes in table column order
    columns: tuple[str, ...]  # column names (`meta` is stored as `metadata`)
    pk: tuple[str, ...]  # primary key attributes
    kinds: tuple[str, ...]  # "time", "json", "bool" or "" per column
    defaults: dict[str, Callable[[], Any]] = field(default_factory=dict)


@functools.cache
def _spec(model: type[SQLModel]) -> _Spec:
    mapper = inspect(model)
    table = model.__table__  # type: ignore[attr-defined]
    attrs, columns, kinds = [], [], []
    for column in table.columns:
        attrs.append(mapper.get_property_by_column(column).key)
        columns.append(column.name)
        kinds.append(kind_of(column.type))
    pk = tuple(mapper.get_property_by_column(c).key for c in table.primary_key.columns)
    defaults: dict[str, Callable[[], Any]] = {}
    for name in attrs:
        info = model.model_fields.get(name)
        if info is None:
            continue
        if info.default_factory is not None:
            defaults[name] = info.default_factory  # type: ignore[assignment]
        elif info.default is not PydanticUndefined:
            defaults[name] = functools.partial(_copy_default, info.default)
    return _Spec(model, table.name, tuple(attrs), tuple(columns), pk, tuple(kinds), defaults)


def _copy_default(value: Any) -> Any:
    return value.copy() if isinstance(value, dict | list) else value


def kind_of(sa_type: Any) -> str:
    """How a column type is decoded: \"time\", \"json\", \"bool\" or \"\" (as is)."""
    if isinstance(sa_type, DateTime):
        return "time"
    if isinstance(sa_type, JSON):
        return "json"
    if isinstance(sa_type, Boolean):
        return "bool"
    return ""


@functools.cache
def record_class(model: type[SQLModel]) -> type[Record]:
    """The plain record class of `model`: its columns as slots, its behaviour copied."""
    if issubclass(model, Record):
        return model
    spec = _spec(model)
    namespace: dict[str, Any] = {
        "__model__": model,
        "__columns__": spec.attrs,
        "__module__": model.__module__,
        "__qualname__": model.__qualname__,
    }
    times = [a for a, kind in zip(spec.attrs, spec.kinds, strict=True) if kind == "time"]
    namespace["__slots__"] = tuple(STORED + a if a in times else a for a in spec.attrs)
    getter = operator.attrgetter(*spec.attrs)
    namespace["__values__"] = (lambda row: (getter(row),)) if len(spec.attrs) == 1 else getter
    for klass in reversed(model.__mro__):
        if not klass.__module__.startswith(_MODEL_PACKAGES):
            continue
        for name, value in vars(klass).items():
            if name.startswith("__") or name in spec.attrs or name.startswith("model_"):
                continue
            _check_copyable(klass, name, value)
            namespace[name] = value
    cls = type(model.__name__, (Record,), namespace)
    for name in times:
        setattr(cls, name, _Timestamp(vars(cls)[STORED + name]))
    cls.api_time = _api_time(tuple(times))  # type: ignore[attr-defined]
    return cls


def _api_time(times: tuple[str, ...]) -> Callable[[Any, str], str | None]:
    """The record class's `api_time(name)`: reads the hidden slot of the timestamp `name` and
    renders stored text by slicing (generated: one branch per timestamp column)."""
    lines = ["def api_time(row, name):"]
    for index, name in enumerate(times):
        keyword = "if" if index == 0 else "elif"
        lines += [f"    {keyword} name == {name!r}:", f"        value = row.{STORED}{name}"]
    lines += [
        "    else:" if times else "    if True:",
        "        raise AttributeError(f'{type(row).__name__} has no timestamp {name!r}')",
        "    if value is None:",
        "        return None",
        "    if type(value) is str:",
        "        return value[:10] + 'T' + value[11:19] + 'Z'",
        "    return rfc3339(value)",
    ]
    env: dict[str, Any] = {"rfc3339": timefmt.rfc3339}
    exec("\n".join(lines), env)  # noqa: S102 - generated from column names, not input
    function: Callable[[Any, str], str | None] = env["api_time"]
    return function


# The slot behind a timestamp attribute (`created_at` is stored in `_stored_created_at`).
STORED = "_stored_"


class _Timestamp:
    """A timestamp attribute of a record. A row read from SQLite keeps the stored text
    (`YYYY-MM-DD HH:MM:SS.ffffff`, UTC) until the attribute is first read, which parses it
    into an aware datetime; the record's `api_time(name)` renders the wire form from either
    without parsing, so a page of rows renders its timestamps by slicing text."""

    __slots__ = ("slot",)

    def __init__(self, slot: Any) -> None:
        self.slot = slot  # the member descriptor of the hidden slot

    def __get__(self, record: Any, owner: Any = None) -> Any:
        if record is None:
            return self
        value = self.slot.__get__(record, owner)
        if type(value) is str:
            value = stored_time(value)
            self.slot.__set__(record, value)
        return value

    def __set__(self, record: Any, value: Any) -> None:
        self.slot.__set__(record, value)


def stored_time(text: str) -> datetime:
    """The aware UTC datetime of SQLite's stored text, to the microsecond as stored (as
    PostgreSQL returns it)."""
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def wire_time(row: Any, name: str) -> str | None:
    """The timestamp attribute `name` of `row` as the wire shows it (RFC 3339, `Z`); records
    have a faster `api_time` of their own (see `_api_time`)."""
    value = getattr(row, name)
    return None if value is None else timefmt.rfc3339(value)


def _check_copyable(klass: type, name: str, value: Any) -> None:
    """A method using zero-argument `super()` is bound to the model class; refuse it loudly."""
    function = value.fget if isinstance(value, property) else value
    function = getattr(function, "__func__", function)
    if isinstance(function, FunctionType) and "__class__" in function.__code__.co_freevars:
        raise TypeError(
            f"{klass.__name__}.{name} uses super() or __class__; records copy model methods, "
            "so call the base function explicitly"
        )


def new(model: type[SQLModel], **values: Any) -> Any:
    """A new row of `model` (a record), the field defaults applied."""
    return record_class(model)(**values)


def values_of(record: Record) -> tuple[Any, ...]:
    """The record's column values, in table column order."""
    return record.__values__(record)


def as_dict(record: Any) -> dict[str, Any]:
    """The record's columns by attribute name."""
    return dict(zip(record.__columns__, values_of(record), strict=True))


def model_of(record: Any) -> type[SQLModel]:
    """The SQLModel table a record is a row of."""
    model: type[SQLModel] = record.__model__
    return model


def primary_key(record: Any) -> tuple[Any, ...]:
    spec = _spec(record.__model__)
    return tuple(getattr(record, name) for name in spec.pk)


# --- values on the wire to each driver --------------------------------------------------------


@functools.lru_cache(maxsize=1)  # the rows of one second share one timestamp (timefmt.rfc3339)
def sqlite_time_text(value: datetime) -> str:
    """The SQLite storage text of a timestamp (the same format SQLAlchemy writes, so text
    comparison in SQL orders timestamps)."""
    if value.tzinfo is not None:
        if value.utcoffset():
            value = value.astimezone(UTC)
        return value.isoformat(sep=" ", timespec="microseconds")[:-6]  # without "+00:00"
    return value.isoformat(sep=" ", timespec="microseconds")


class JsonText(str):
    """A JSON column's value already encoded (`_pg_json`): PostgreSQL's codec (`json_text`)
    takes it as is."""

    __slots__ = ()


def json_text(value: Any) -> str:
    """A JSON column's value as stored (a `JsonText` is already)."""
    if type(value) is JsonText:
        return value
    return orjson.dumps(value).decode()


def _sqlite_json(value: Any) -> Any:
    """A JSON column's value as SQLite stores it: its text (a string or a number too), or
    NULL for None."""
    return None if value is None else json_text(value)


def _pg_json(value: Any) -> Any:
    """A JSON column's value for PostgreSQL, encoded here rather than by the codec (so a value
    many rows share is encoded once: `encode_rows`), or NULL for None."""
    return None if value is None else JsonText(json_text(value))


json_value = orjson.loads  # a JSON column's stored text as its value


def _sqlite_json_value(stored: Any) -> Any:
    """A JSON column's value from SQLite, which keeps a number's text as the number (the
    column's numeric affinity)."""
    return orjson.loads(stored) if type(stored) is str else stored


def _raw(value: Any) -> Any:  # the marker of values a record keeps as stored (timestamps)
    return value


# SQLite stores timestamps as SQLAlchemy's DATETIME does (`YYYY-MM-DD HH:MM:SS.ffffff`; a record
# keeps the text until read, see _Timestamp), JSON as text and booleans as 0/1; asyncpg decodes
# PostgreSQL's types itself (JSON with the codec tunnelgw.storage.db sets on each connection).
SQLITE_DECODERS: dict[str, Decoder] = {"time": _raw, "json": _sqlite_json_value, "bool": bool}
PG_DECODERS: dict[str, Decoder] = {}


def encode_sqlite(value: Any) -> Any:
    if isinstance(value, datetime):
        return sqlite_time_text(value)
    if isinstance(value, dict | list):
        return json_text(value)
    return value


def encode_pg(value: Any) -> Any:
    if isinstance(value, datetime) and value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value


# The encoding of each column kind that `TableSql.insert_of` gives (none: as is): by the
# column, not the value, so a JSON column's string or number is stored as JSON as well.
SQLITE_ENCODERS: dict[str, Encoder] = {"time": encode_sqlite, "json": _sqlite_json}
PG_ENCODERS: dict[str, Encoder] = {"time": encode_pg, "json": _pg_json}


_NOT_YET = object()  # no value is this one


def encode_rows(rows: Sequence[Sequence[Any]], encoding: Encoding) -> list[list[Any]]:
    """`rows` with their values at the positions of `encoding` encoded (`insert_of`); a value
    that is the very object of the previous row's at its position is encoded once (the
    timestamp or the JSON document that rows made together share)."""
    encoded: list[list[Any]] = []
    last: list[Any] = [_NOT_YET] * len(encoding)
    done: list[Any] = [None] * len(encoding)
    for row in rows:
        values = list(row)
        for k, (i, encode) in enumerate(encoding):
            value = values[i]
            if value is not last[k]:
                last[k], done[k] = value, encode(value)
            values[i] = done[k]
        encoded.append(values)
    return encoded


# --- the SQL of one table ---------------------------------------------------------------------


def quote(name: str) -> str:
    return f'"{name}"'


@dataclass
class TableSql:
    """The generated statements of one table for one dialect (placeholder `mark`), and the
    loader turning one result row into a record."""

    spec: _Spec
    mark: str
    decoders: dict[str, Decoder]
    encoders: dict[str, Encoder]
    select: str = ""
    by_pk: str = ""
    insert: str = ""
    delete: str = ""
    _updates: dict[tuple[str, ...], str] = field(default_factory=dict)
    _inserts: dict[tuple[str, ...], tuple[str, Encoding]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        spec, mark = self.spec, self.mark
        table = quote(spec.table)
        self.select = f"SELECT {', '.join(map(quote, spec.columns))} FROM {table}"
        self.by_pk = f"{self.select} WHERE {self._pk_match()}"
        marks = ", ".join([mark] * len(spec.columns))
        self.insert = (
            f"INSERT INTO {table} ({', '.join(map(quote, spec.columns))}) VALUES ({marks})"
        )
        self.delete = f"DELETE FROM {table} WHERE {self._pk_match()}"
        self.load = loader(record_class(spec.model), spec.attrs, spec.kinds, self.decoders)

    def insert_of(self, attrs: tuple[str, ...]) -> tuple[str, Encoding]:
        """INSERT of the columns of the attributes `attrs` only, and the position among them
        and the encoder of each value the driver needs encoded (`SQLITE_ENCODERS`,
        `PG_ENCODERS`); made once per tuple."""
        found = self._inserts.get(attrs)
        if found is None:
            column = dict(zip(self.spec.attrs, self.spec.columns, strict=True))
            kind = dict(zip(self.spec.attrs, self.spec.kinds, strict=True))
            names = ", ".join(quote(column[a]) for a in attrs)
            marks = ", ".join([self.mark] * len(attrs))
            sql = f"INSERT INTO {quote(self.spec.table)} ({names}) VALUES ({marks})"
            encoders = ((i, self.encoders.get(kind[attr])) for i, attr in enumerate(attrs))
            encoding = tuple((i, encode) for i, encode in encoders if encode is not None)
            found = self._inserts[attrs] = (sql, encoding)
        return found

    def _pk_match(self) -> str:
        column = dict(zip(self.spec.attrs, self.spec.columns, strict=True))
        return " AND ".join(f"{quote(column[a])} = {self.mark}" for a in self.spec.pk)

    def update(self, attrs: tuple[str, ...]) -> str:
        """UPDATE of the columns of `attrs`, matched by primary key."""
        sql = self._updates.get(attrs)
        if sql is None:
            column = dict(zip(self.spec.attrs, self.spec.columns, strict=True))
            sets = ", ".join(f"{quote(column[a])} = {self.mark}" for a in attrs)
            sql = f"UPDATE {quote(self.spec.table)} SET {sets} WHERE {self._pk_match()}"
            self._updates[attrs] = sql
        return sql

    def where(self, condition: str) -> str:
        """`SELECT <every column> FROM <table> WHERE <condition>` (columns quoted by caller)."""
        return f"{self.select} WHERE {condition}"


def loader(
    cls: type[Record], attrs: Sequence[str], kinds: Sequence[str], decoders: dict[str, Decoder]
) -> Callable[[Sequence[Any]], Any]:
    """A function making a record of `cls` from a result row holding the columns `attrs`
    (with decoding `kinds`), generated once: one assignment per column."""
    key: Any = cls  # classes hash by identity (mypy sees Record's __eq__)
    return _loader(key, tuple(attrs), tuple(kinds), tuple(sorted(decoders.items())))


@functools.cache
def _loader(
    cls: Any,
    attrs: tuple[str, ...],
    kinds: tuple[str, ...],
    decoder_items: tuple[tuple[str, Decoder], ...],
) -> Callable[[Sequence[Any]], Any]:
    decoders = dict(decoder_items)
    lines = ["def load(row):", "    record = new(cls)"]
    env: dict[str, Any] = {"new": object.__new__, "cls": cls}
    for index, (attr, kind) in enumerate(zip(attrs, kinds, strict=True)):
        decode = decoders.get(kind)
        if decode is _raw:
            lines.append(f"    record.{STORED}{attr} = row[{index}]")
        elif decode is None:
            lines.append(f"    record.{attr} = row[{index}]")
        else:
            env[f"decode_{index}"] = decode
            lines.append(f"    value = row[{index}]")
            lines.append(f"    record.{attr} = None if value is None else decode_{index}(value)")
    lines.append("    return record")
    exec("\n".join(lines), env)  # noqa: S102 - generated from column names, not input
    load: Callable[[Sequence[Any]], Any] = env["load"]
    return load


def table_sql(model: type[SQLModel], dialect: str) -> TableSql:
    """The statements of `model`'s table for `dialect` ("sqlite" or "postgresql")."""
    return _table_sql(model, dialect)


@functools.cache
def _table_sql(model: type[SQLModel], dialect: str) -> TableSql:
    if dialect == "sqlite":
        return TableSql(_spec(model), "?", SQLITE_DECODERS, SQLITE_ENCODERS)
    return TableSql(_spec(model), "%s", PG_DECODERS, PG_ENCODERS)


def spec_of(model: type[SQLModel]) -> _Spec:
    return _spec(model)
