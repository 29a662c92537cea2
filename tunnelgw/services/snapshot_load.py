"""Loading a snapshot (tunnelgw.services.snapshots) into an account, in the caller's write
unit: every row with the snapshot's id, into an account that holds no resources (its own
principals and API keys are updated, keeping their secrets). Every problem is collected
as (path in the document, message); a load with problems writes nothing."""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import LargeBinary, Table, UniqueConstraint, func, select

from tunnelgw.crypto import keys
from tunnelgw.models import Account, IpRestriction
from tunnelgw.models.account import API_ENFORCED, API_NONE, API_RECORDED
from tunnelgw.services import event_routes, quotas
from tunnelgw.services.snapshots import (
    KEPT,
    associated_data,
    from_json,
    left_out_value,
    model_of,
    public_columns,
    secret_columns,
    tables,
)
from tunnelgw.storage import records
from tunnelgw.storage.unit import Unit

Path_ = tuple[str | int, ...]
ROOT: Path_ = ("snapshot",)


@dataclass
class _Load:
    unit: Unit
    account_id: str
    problems: list[tuple[Path_, str]] = field(default_factory=list)
    # (table, id, column) -> the stored value of a secret (sealed ones opened, or left out).
    secrets: dict[tuple[str, str, str], Any] = field(default_factory=dict)
    # Where each secret entry is in the document, until a row's secret column takes it.
    unused: dict[tuple[str, str, str], Path_] = field(default_factory=dict)

    def problem(self, path: Path_, message: str) -> None:
        self.problems.append(((*ROOT, *path), message))


async def load(unit: Unit, account_id: str, snapshot: dict[str, Any]) -> dict[str, int]:
    """Write the rows of `snapshot` (schema-checked) into `account_id` in the write unit
    `unit`; the rows per table loaded. Raises SnapshotError listing every problem found, with
    nothing written."""
    run = _Load(unit, account_id)
    _secrets(run, snapshot)
    decoded = _decode(run, snapshot.get("tables") or {})
    for path in run.unused.values():
        run.problem(path, "names no secret column of a row in `tables`")
    await _check_empty(run)
    if run.problems:
        raise SnapshotError(run.problems)
    updates = await _check_conflicts(run, decoded)
    if run.problems:
        raise SnapshotError(run.problems)
    counts: dict[str, int] = {}
    for table, rows in decoded:
        model = model_of(str(table.name))
        spec = records.spec_of(model)
        attr = dict(zip(spec.columns, spec.attrs, strict=True))
        public = [attr[column] for column in public_columns(table)]
        for row in rows:
            values = {attr[column]: value for column, value in row.items()}
            held = updates.get((str(table.name), row.get("id")))
            if held is not None:  # the account's own principal or key: keeps its secrets
                for name in public:
                    setattr(held, name, values[name])
            else:
                unit.add(records.new(model, account_id=account_id, **values))
        if rows:
            counts[str(table.name)] = len(rows)
        await unit.flush()  # parents before children
    await _summarize_restrictions(unit, account_id)
    await event_routes.store(unit, account_id)
    await quotas.forget_all(unit, account_id)  # rows counted by quotas, not admitted
    return counts


class SnapshotError(Exception):
    """The snapshot cannot be loaded; `problems` are (path, message) pairs."""

    def __init__(self, problems: list[tuple[Path_, str]]) -> None:
        self.problems = problems
        super().__init__("; ".join(message for _, message in problems))


def _secrets(run: _Load, snapshot: dict[str, Any]) -> None:
    """The secrets the document carries, opened with this server's KEK; and those it says
    were left out."""
    for index, entry in enumerate(snapshot.get("left_out") or []):
        key = (entry["table"], entry["id"], entry["field"])
        run.secrets[key] = None
        run.unused[key] = ("left_out", index)
    carried = snapshot.get("secrets")
    if carried is None:
        return
    kek = keys.current()
    if carried["kek_fingerprint"] != keys.fingerprint(kek):
        run.problem(
            ("secrets", "kek_fingerprint"),
            "the secrets are sealed under another key-encryption key than this server's: "
            "they load only into the server that took the snapshot (or one with its "
            "TUNNELGW_KEY_ENCRYPTION_KEY); take a snapshot without include_secrets instead",
        )
        return
    for index, entry in enumerate(carried["sealed"]):
        table, row_id, column = entry["table"], entry["id"], entry["field"]
        try:
            sealed = base64.b64decode(entry["value"], validate=True)
            plain = keys.unseal(kek, sealed, associated_data(table, column, row_id))
        except (binascii.Error, ValueError, keys.UnwrapError):
            run.problem(
                ("secrets", "sealed", index, "value"), "does not open with this server's key"
            )
            continue
        run.secrets[(table, row_id, column)] = plain
        run.unused[(table, row_id, column)] = ("secrets", "sealed", index)


def _decode(run: _Load, given: dict[str, Any]) -> list[tuple[Table, list[dict[str, Any]]]]:
    """The rows of each known table as values to store, in load order (parents first)."""
    known = {str(table.name): table for table in tables()}
    for name in given:
        if name not in known:
            run.problem(("tables", name), f"unknown table {name!r} (or one snapshots leave out)")
    decoded = []
    for name, table in known.items():
        rows = given.get(name) or []
        decoded.append(
            (table, [_row(run, table, (name, index), row) for index, row in enumerate(rows)])
        )
    return decoded


def _row(run: _Load, table: Table, where: Path_, row: dict[str, Any]) -> dict[str, Any]:
    path: Path_ = ("tables", *where)
    columns = public_columns(table)
    for extra in sorted(row.keys() - set(columns)):
        run.problem(
            (*path, extra), f"the table {table.name} has no column {extra!r} a snapshot carries"
        )
    values: dict[str, Any] = {}
    for column in columns:
        if column not in row:
            run.problem(path, f"the column {column!r} is missing")
            continue
        try:
            values[column] = from_json(table.c[column].type, row[column])
        except ValueError as exc:
            run.problem((*path, column), f"{row[column]!r} {exc}")
            continue
        if values[column] is None and not table.c[column].nullable:
            run.problem((*path, column), "must not be null")
    for column in secret_columns(table):
        values[column] = _secret(run, table, path, values.get("id"), column)
    return values


def _secret(run: _Load, table: Table, path: Path_, row_id: Any, column: str) -> Any:
    key = (str(table.name), str(row_id), column)
    if key not in run.secrets:
        if not table.c[column].nullable:
            run.problem(path, f"the snapshot neither carries nor leaves out its {column!r}")
        return None
    run.unused.pop(key, None)
    plain = run.secrets[key]
    if plain is None:
        return left_out_value(table, column, str(row_id))
    return plain if isinstance(table.c[column].type, LargeBinary) else plain.decode("utf-8")


async def _check_empty(run: _Load) -> None:
    """The account must hold no resources (reset keeps its principals, API keys and access
    tokens)."""
    held = []
    for table in tables():
        if table.name in KEPT:
            continue
        count = select(func.count()).select_from(table).where(table.c.account_id == run.account_id)
        number = (await run.unit.exec(count)).first()
        if number:
            held.append(f"{table.name}: {number}")
    if held:
        run.problem(
            (),
            f"the account {run.account_id} holds resources ({', '.join(held)}): a snapshot "
            "loads only into an empty account; reset it first (POST /_admin/reset, "
            "`tunnelgw reset`)",
        )


async def _check_conflicts(
    run: _Load, decoded: list[tuple[Table, list[dict[str, Any]]]]
) -> dict[tuple[str, Any], Any]:
    """Refuse ids of another account and unique values another account holds; the rows of
    the account's own principals and keys the snapshot names (to update), by (table, id)."""
    updates: dict[tuple[str, Any], Any] = {}
    for table, rows in decoded:
        name = str(table.name)
        model = model_of(name)
        for index, row in enumerate(rows):
            path: Path_ = ("tables", name, index)
            key = tuple(row.get(str(c.name)) for c in table.primary_key.columns)
            held: Any = await run.unit.get(model, key)
            if held is not None:
                if held.account_id != run.account_id:
                    run.problem(path, f"{name} {_shown(key)} exists in another account")
                elif name in KEPT:
                    updates[(name, row.get("id"))] = held
                else:  # pragma: no cover - the account is empty
                    run.problem(path, f"{name} {_shown(key)} exists already")
                continue
            for columns in _unique_sets(table):  # a NULL matches nothing
                match = " AND ".join(f'"{c}" = {run.unit.mark}' for c in columns)
                taken: list[Any] = await run.unit.select(
                    model, match, [row.get(c) for c in columns]
                )
                if any(other.account_id != run.account_id for other in taken):
                    secrets = secret_columns(table)  # named, never shown
                    shown = ", ".join(c if c in secrets else f"{c} {row[c]!r}" for c in columns)
                    run.problem(
                        (*path, columns[0]), f"another account holds the {name} with {shown}"
                    )
    return updates


def _unique_sets(table: Table) -> list[tuple[str, ...]]:
    """The column sets unique across accounts (not the primary key, not per account)."""
    sets = [
        tuple(str(c.name) for c in constraint.columns)
        for constraint in table.constraints
        if isinstance(constraint, UniqueConstraint)
    ]
    sets += [tuple(str(c.name) for c in index.columns) for index in table.indexes if index.unique]
    primary = tuple(str(c.name) for c in table.primary_key.columns)
    return sorted({s for s in sets if s != primary and "account_id" not in s})


def _shown(key: tuple[Any, ...]) -> str:
    return repr(key[0]) if len(key) == 1 else repr(key)


async def _summarize_restrictions(unit: Unit, account_id: str) -> None:
    """The account's summary of its `api` IP restrictions, as their handler keeps it."""
    condition = f'"account_id" = {unit.mark} AND "type" = {unit.mark}'
    enforced = [
        row.enforced for row in await unit.select(IpRestriction, condition, [account_id, "api"])
    ]
    account = await unit.get(Account, account_id)
    assert account is not None  # the loader found it
    if any(enforced):
        account.api_restriction = API_ENFORCED
    else:
        account.api_restriction = API_RECORDED if enforced else API_NONE
