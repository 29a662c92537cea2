"""Fixtures: load a YAML/JSON file of resources into an account, so users get what the API
cannot create (referenced and read-only resources) and a non-empty world to explore; and
reset an account to empty. Used by `tunnelgw seed`, `serve --seed` and `tunnelgw reset`.

A load checks the whole file first (schema, labels, rules, existing ids), then writes in
three steps: the direct rows that others reference (one unit of work), the `api:` items
through the server's own create operations (in-process), then endpoints, application users
and sessions (one unit). A file that fails its checks writes nothing.
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy import delete
from sqlmodel import SQLModel, col, select

from models import (
    Account,
    ApiKey,
    EventSource,
    FixtureLoad,
    Principal,
)
from models.reserved_addr import addr_taken
from models.tunnel_group_member import regroup_account
from tunnelgw import accounts, fixture_plan, fixture_rows, fixture_schema, records, timefmt
from tunnelgw.db import Database, Unit, run_with
from tunnelgw.errors import ApiError, Code
from tunnelgw.fixture_plan import Fact, Item, Plan
from tunnelgw.fixture_schema import FixtureError, Issue
from tunnelgw.settings import Settings

__all__ = ["FixtureError", "Issue", "check", "default_account", "load", "reset"]

T = TypeVar("T")
# Tables `reset` keeps: the account itself and its credentials.
KEPT_TABLES = frozenset({"account", "principal", "api_key"})


def check(text: bytes, file: str) -> Plan:
    """The plan of a fixture file; raises FixtureError listing every problem found."""
    from tunnelgw.app import load_spec

    doc = fixture_schema.parse(text, file)
    issues = fixture_schema.validate(doc)
    if issues:
        raise FixtureError(issues)
    plan = fixture_plan.build(doc, load_spec())
    if plan.issues:
        raise FixtureError(plan.issues)
    return plan


@dataclass
class _Target:
    account_id: str
    skipped: bool = False


def load(
    path: Path, settings: Settings, account_id: str | None = None, *, once: bool = False
) -> dict[str, Any]:
    """Load the fixture file `path` into `account_id` (default: the oldest account with an
    admin). With `once`, a file (by SHA-256) already loaded into the account is skipped.
    Returns the summary; raises FixtureError (nothing written, unless an api item is refused:
    then the rows written before it stay) or LookupError (no such account)."""
    text = path.read_bytes()
    plan = check(text, str(path))
    digest = hashlib.sha256(text).hexdigest()
    try:
        target = _run(settings, lambda db: _phase1(db, plan, account_id, digest, once))
    except ApiError as exc:
        if not (once and exc.code is Code.CONFLICT):
            raise
        # Another process recorded the same file meanwhile; this run now sees its record.
        target = _run(settings, lambda db: _phase1(db, plan, account_id, digest, once))
    summary: dict[str, Any] = {"account_id": target.account_id, "file": str(path)}
    summary |= {"digest": digest, "loaded": not target.skipped}
    if target.skipped:
        return summary
    if plan.api_items():
        _create_through_api(settings, plan, target.account_id)
    _run(settings, lambda db: _write(db, fixture_rows.phase3_rows(plan, target.account_id)))
    counts: dict[str, int] = {}
    for item in plan.items:
        counts[item.section] = counts.get(item.section, 0) + 1
    labels = {label: item.id for label, item in plan.labels.items()}
    tokens = {item.label or str(item.id): item.token for item in plan.items if item.token}
    return summary | {"counts": counts, "labels": labels, "api_key_tokens": tokens}


def _run(settings: Settings, work: Callable[[Database], Awaitable[T]]) -> T:
    return run_with(settings.resolved_database_url(), work)


async def default_account(unit: Unit) -> str | None:
    """The oldest account that has an admin principal."""
    stmt = (
        select(Account.id)
        .join(Principal, col(Principal.account_id) == col(Account.id))
        .where(col(Principal.is_admin))
        .order_by(col(Account.created_at), col(Account.id))
        .limit(1)
    )
    found: str | None = (await unit.exec(stmt)).first()
    return found


async def _account(unit: Unit, account_id: str | None) -> str:
    if account_id is None:
        found = await default_account(unit)
        if found is None:
            raise LookupError("no account with an admin principal; create one first")
        return found
    if await unit.get(Account, account_id) is None:
        raise LookupError(f"no account {account_id!r}")
    return account_id


async def _phase1(
    database: Database, plan: Plan, account_id: str | None, digest: str, once: bool
) -> _Target:
    """Check the existing ids the file names, then write the directly referenced rows and
    the load record, in one unit; skipped when `once` and the file is recorded."""
    async with database.write() as unit:
        account = await _account(unit, account_id)
        recorded = await unit.get(FixtureLoad, (account, digest))
        if once and recorded is not None:
            return _Target(account, skipped=True)
        plan.facts = fixture_rows.file_facts(plan) | await _literal_facts(unit, plan, account)
        await _check_addrs(unit, plan)
        await _check_principals(unit, plan, account)
        if not plan.issues:
            fixture_plan.check_sessions(plan)
        if plan.issues:
            raise FixtureError(plan.issues)
        rows = list(fixture_rows.phase1_rows(plan, account))
        # Event sources after their subscriptions (no ORM relationship orders the inserts).
        unit.add_all([row for row in rows if records.model_of(row) is not EventSource])
        await unit.flush()
        unit.add_all([row for row in rows if records.model_of(row) is EventSource])
        if plan.section("tunnels") or plan.section("tunnel_group_backends"):
            await regroup_account(unit, account)
        if recorded is None:
            unit.add(FixtureLoad.new(account_id=account, digest=digest))
        else:
            recorded.loaded_at = timefmt.utcnow()
        return _Target(account)


async def _literal_facts(unit: Unit, plan: Plan, account: str) -> dict[str, Fact]:
    facts: dict[str, Fact] = {}
    for literal in plan.literals:
        model = fixture_plan.KIND_MODELS[literal.kind]
        row = await unit.get(model, literal.value)
        if row is None or row.account_id != account:
            plan.add(literal.path, f"no {literal.kind} {literal.value!r} in account {account}")
            continue
        facts[literal.value] = Fact(
            literal.kind,
            meta=getattr(row, "meta", ""),
            public_url=getattr(row, "public_url", ""),
            edge_id=getattr(row, "edge_id", None),
            addr=getattr(row, "addr", ""),
        )
    return facts


async def _check_addrs(unit: Unit, plan: Plan) -> None:
    """A reserved address of the file must not be reserved already (by any account)."""
    for item in plan.section("reserved_addrs"):
        host, port = fixture_plan.addr_key(item.data["addr"])
        if await addr_taken(unit, host, port):
            plan.add((*item.path, "addr"), "the address is reserved already (by some account)")


async def _check_principals(unit: Unit, plan: Plan, account: str) -> None:
    """Each endpoint's `principal_id` must be a user or bot of the account."""
    for item in plan.section("endpoints"):
        principal_id = item.data.get("principal_id")
        if principal_id is None:
            continue
        row = await unit.get(Principal, principal_id)
        if row is None or row.account_id != account:
            plan.add(
                (*item.path, "principal_id"), f"no principal {principal_id!r} in account {account}"
            )


async def _write(database: Database, rows: list[Any]) -> None:
    async with database.write() as unit:
        unit.add_all(rows)


def _create_through_api(settings: Settings, plan: Plan, account: str) -> None:
    """POST each api item to its create operation, in file order, as the account's admin
    (a temporary API key, deleted afterwards)."""
    key_id, token = _run(settings, lambda db: _temporary_key(db, account))
    try:
        with _api_client(settings) as client:
            headers = {"Authorization": f"Bearer {token}", "Service-Version": "2"}
            for item in plan.api_items():
                _post(client, headers, plan, item)
    finally:
        _run(settings, lambda db: _delete_key(db, key_id))


async def _temporary_key(database: Database, account: str) -> tuple[str, str]:
    async with database.write() as unit:
        stmt = (
            select(Principal)
            .where(Principal.account_id == account, col(Principal.is_admin))
            .order_by(col(Principal.created_at), col(Principal.id))
        )
        admin = (await unit.exec(stmt)).first()
        if admin is None:
            raise LookupError(f"account {account} has no admin principal to create api items")
        key, token = await accounts.issue_key(unit, admin, description="fixture load")
        return key.id, token


async def _delete_key(database: Database, key_id: str) -> None:
    async with database.write() as unit:
        await unit.exec(delete(ApiKey).where(col(ApiKey.id) == key_id))


@contextmanager
def _api_client(settings: Settings) -> Iterator[Any]:
    """A test client of a fresh in-process app; the process-wide database, settings and
    key-encryption key are put back afterwards (the app's lifespan replaces them)."""
    from starlette.testclient import TestClient

    from tunnelgw import db
    from tunnelgw import settings as settings_module
    from tunnelgw.app import create_app
    from tunnelgw.crypto import keys

    saved = (db._current, settings_module._current, keys._current)
    try:
        app = create_app(settings)
        with TestClient(
            app, base_url="http://fixtures.invalid", raise_server_exceptions=False
        ) as c:
            yield c
    finally:
        db._current, settings_module._current, keys._current = saved


def _post(client: Any, headers: dict[str, str], plan: Plan, item: Item) -> None:
    path = fixture_plan.API_SECTIONS[item.section.removeprefix("api.")][0]
    body = plan.resolve({k: v for k, v in item.data.items() if k != "ref"})
    response = client.post(path, json=body, headers=headers)
    answer = response.json() if response.content else {}
    if response.status_code != 201:
        field = answer.get("details", {}).get("field") if isinstance(answer, dict) else None
        where = (*item.path, field) if field in item.data else item.path
        code, msg = answer.get("error_code", ""), answer.get("msg", response.text[:200])
        message = f"POST {path} answered {response.status_code} {code}: {msg}"
        raise FixtureError([plan.doc.issue(where, message)], written=True)
    item.id = answer["id"]
    item.token = answer.get("token")
    plan.facts[item.id] = Fact(
        item.kind, meta=answer.get("metadata", ""), addr=answer.get("addr", "")
    )


async def reset(database: Database, account_id: str) -> dict[str, int]:
    """Delete every row of the account except the account, its principals and API keys, in
    one unit of work; rows deleted per table."""
    import models  # noqa: F401  (registers every table)

    tables = [
        table
        for table in reversed(SQLModel.metadata.sorted_tables)  # children first
        if "account_id" in table.c and table.name not in KEPT_TABLES
    ]
    counts: dict[str, int] = {}
    async with database.write() as unit:
        if await unit.get(Account, account_id) is None:
            raise LookupError(f"no account {account_id!r}")
        for table in tables:
            result = await unit.exec(delete(table).where(table.c.account_id == account_id))
            counts[table.name] = result.rowcount
    return counts
