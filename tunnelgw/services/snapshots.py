"""Account snapshots: an account's whole state as rows of every table with an `account_id`
(but the excluded ones), JSON-typed and in a stable order, with its secret columns left out
or sealed under the KEK (`take`). Loading rows back is tunnelgw.services.snapshot_load."""

from __future__ import annotations

import base64
import functools
from datetime import UTC, datetime
from typing import Any

import orjson
from sqlalchemy import Boolean, DateTime, Float, Integer, LargeBinary, Table, select, text
from sqlmodel import SQLModel

from tunnelgw import models
from tunnelgw.core import timefmt
from tunnelgw.crypto import keys
from tunnelgw.models.base import SECRET
from tunnelgw.storage import db, records
from tunnelgw.storage.unit import Unit

FORMAT = 1
# Tables with an `account_id` that are not the account's world: the request journal, event
# deliveries and the routes they name, fault rules, fixture load records and quota bounds.
EXCLUDED = frozenset(
    {
        "request_journal",
        "event_record",
        "event_route",
        "fault_rule",
        "fixture_load",
        "quota_usage",
    }
)
# What reset keeps: a load updates the account's own rows of these, keeping their secrets.
KEPT = frozenset({"principal", "api_key", "access_token"})
# How a secret column holds "left out of the snapshot this row was loaded from": an empty
# blob, or this prefix and the row id (a token hash is unique; no token hashes to it).
LEFT_OUT_PREFIX = "!left-out:"


@functools.cache
def tables() -> tuple[Table, ...]:
    """The exported tables, parents before children."""
    models.load_all()  # every table on the metadata

    return tuple(
        table
        for table in SQLModel.metadata.sorted_tables
        if "account_id" in table.c and table.name not in EXCLUDED
    )


@functools.cache
def model_of(table_name: str) -> type[SQLModel]:
    """The SQLModel class of the table `table_name`."""
    stack: list[type[SQLModel]] = [SQLModel]
    while stack:
        cls = stack.pop()
        stack.extend(cls.__subclasses__())
        table = vars(cls).get("__table__")
        if table is not None and table.name == table_name:
            return cls
    raise KeyError(table_name)


def secret_columns(table: Table) -> dict[str, str]:
    """The table's secret columns, each with what a row loaded without it cannot do."""
    return {str(c.name): str(c.info[SECRET]) for c in table.columns if SECRET in c.info}


def public_columns(table: Table) -> list[str]:
    """The columns a snapshot row carries: all but `account_id` and the secret ones."""
    hidden = {"account_id", *secret_columns(table)}
    return [str(c.name) for c in table.columns if c.name not in hidden]


def is_left_out(value: Any) -> bool:
    """Whether a secret column's value says the secret was left out of a snapshot."""
    return value == b"" or (isinstance(value, str) and value.startswith(LEFT_OUT_PREFIX))


def left_out_value(table: Table, column: str, row_id: str) -> Any:
    """What a secret column holds once its value was left out of a snapshot."""
    return b"" if isinstance(table.c[column].type, LargeBinary) else LEFT_OUT_PREFIX + row_id


def associated_data(table: str, column: str, row_id: str) -> bytes:
    """What a sealed secret is bound to: its table, column and row."""
    return f"snapshot:{table}.{column}:{row_id}".encode()


def to_json(column_type: Any, value: Any) -> Any:
    """A stored value as the snapshot writes it (the same for both engines): timestamps RFC
    3339 with microseconds, bytes base64, JSON as JSON, booleans as booleans."""
    if value is None:
        return None
    if isinstance(column_type, DateTime):
        if isinstance(value, str):  # SQLite's stored text
            value = datetime.fromisoformat(value)
        if value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    if isinstance(column_type, LargeBinary):
        return base64.b64encode(bytes(value)).decode("ascii")
    kind = records.kind_of(column_type)
    if kind == "json":
        return orjson.loads(value) if isinstance(value, str | bytes) else value
    if kind == "bool":
        return bool(value)
    return value


def from_json(column_type: Any, value: Any) -> Any:
    """The value to store for a snapshot's JSON value; raises ValueError saying why not."""
    if value is None or records.kind_of(column_type) == "json":
        return value
    try:
        if isinstance(column_type, DateTime):
            return timefmt.parse_rfc3339(value).astimezone(UTC)
        if isinstance(column_type, LargeBinary):
            return base64.b64decode(value, validate=True)
    except (TypeError, ValueError):
        raise ValueError(
            "is not base64" if isinstance(column_type, LargeBinary) else "is not an RFC 3339 time"
        ) from None
    expected: type | tuple[type, ...] = str
    if isinstance(column_type, Boolean):
        expected = bool
    elif isinstance(column_type, Float):
        expected = (int, float)
    elif isinstance(column_type, Integer):
        expected = int
    if not isinstance(value, expected) or (expected is not bool and isinstance(value, bool)):
        raise ValueError(f"is not of the column's type ({type(column_type).__name__})")
    return value


def _key(table: Table, row: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(row[str(c.name)] for c in table.primary_key.columns)


async def take(unit: Unit, account_id: str, *, include_secrets: bool) -> dict[str, Any]:
    """The `snapshot` section of the account's state, read in `unit`: a write unit just
    begun (one transaction, so one state; it writes nothing); with `include_secrets`, its
    secrets sealed under the current KEK (tunnelgw.crypto.keys)."""
    if unit.dialect == "postgresql":  # every statement of the unit sees the same state
        await unit.exec(text("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ"))
    kek = keys.current() if include_secrets else None
    found: dict[str, list[dict[str, Any]]] = {}
    left_out: list[dict[str, Any]] = []
    sealed: list[dict[str, Any]] = []
    for table in tables():
        name = str(table.name)
        stored = (await unit.exec(select(table).where(table.c.account_id == account_id))).all()
        secrets = secret_columns(table)
        rows = []
        for values in stored:
            raw = dict(zip((str(c.name) for c in table.columns), values, strict=True))
            row = {
                column: to_json(table.c[column].type, raw[column])
                for column in public_columns(table)
            }
            rows.append(row)
            for column, effect in secrets.items():
                value = raw[column]
                if value is None:
                    continue  # no secret held: nothing left out
                entry = {"table": name, "id": row["id"], "field": column}
                if kek is None or is_left_out(value):
                    left_out.append({**entry, "effect": effect})
                else:
                    token = keys.seal(kek, _bytes(value), associated_data(name, column, row["id"]))
                    sealed.append({**entry, "value": base64.b64encode(token).decode("ascii")})
        if rows:
            rows.sort(key=lambda row: _key(table, row))
            found[name] = rows
    left_out.sort(key=lambda e: (e["table"], e["id"], e["field"]))
    sealed.sort(key=lambda e: (e["table"], e["id"], e["field"]))
    return {
        "format": FORMAT,
        "taken_at": timefmt.rfc3339(timefmt.utcnow()),
        "source_account_id": account_id,
        "tables": found,
        "left_out": left_out,
        "secrets": None
        if kek is None
        else {"kek_fingerprint": keys.fingerprint(kek), "sealed": sealed},
    }


async def take_now(account_id: str, *, include_secrets: bool) -> dict[str, Any]:
    """`take` in a write unit of its own: one transaction, so one state (nothing is
    written)."""
    async with db.write() as unit:
        return await take(unit, account_id, include_secrets=include_secrets)


def _bytes(value: Any) -> bytes:
    return (
        bytes(value) if isinstance(value, bytes | bytearray | memoryview) else str(value).encode()
    )
