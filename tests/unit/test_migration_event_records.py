"""Revision 0021 (issue 31): the event deliveries of older databases become one record per
event, with its deliveries in their order, and go back on a downgrade. Revision 0023: the
deliveries' ids implied by the event's, written out on a downgrade."""

from __future__ import annotations

import importlib
import json
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy import create_engine

from tests.unit.test_migrations import _alembic, url  # noqa: F401  (a fresh database)
from tunnelgw.core import ids
from tunnelgw.migrations import migrate
from tunnelgw.models import EventRecord

COLUMNS = (
    "id, account_id, created_at, event_id, event_type, subscription_id, destination_id, "
    "event, outcome, error"
)


def _delivery(
    account: str, event_id: str, destination: str, error: dict[str, Any] | None
) -> dict[str, Any]:
    return {
        "id": ids.new_id("evd"),
        "account_id": account,
        "created_at": datetime(2026, 11, 23, 10, 0, tzinfo=UTC),
        "event_id": event_id,
        "event_type": "api_key_created.v0",
        "subscription_id": "esb_1",
        "destination_id": destination,
        "event": {"event_id": event_id, "object": {"id": "ak_1"}},
        "outcome": "delivered" if error is None else "failed",
        "error": error,
    }


def _rows(url: str, sql: str) -> list[tuple[Any, ...]]:  # noqa: F811
    engine = create_engine(migrate.sync_url(url))
    try:
        with engine.connect() as conn:
            return [tuple(row) for row in conn.execute(sa.text(sql))]
    finally:
        engine.dispose()


def test_deliveries_become_one_record_per_event_and_come_back(url, monkeypatch):  # noqa: F811
    revision = importlib.import_module("tunnelgw.migrations.versions.0021_event_records")
    monkeypatch.setattr(revision, "BATCH", 2)  # an event's deliveries across two batches
    _alembic(url, "upgrade", "0020")
    accounts = [ids.new_id("acct") for _ in range(2)]
    first, second, third = (ids.new_id("ev") for _ in range(3))
    error = {"status_code": 500, "error_code": "ERR_X", "rule": "flt_1"}
    deliveries = [
        _delivery(accounts[0], first, "ed_1", None),
        _delivery(accounts[0], first, "ed_2", error),
        _delivery(accounts[0], first, "ed_3", None),
        _delivery(accounts[1], second, "ed_4", None),
        _delivery(accounts[0], third, "ed_1", None),
    ]
    engine = create_engine(migrate.sync_url(url))
    with engine.begin() as conn:
        for account in accounts:
            conn.execute(
                sa.text("INSERT INTO account (id, name, created_at) VALUES (:a, '', :t)"),
                {"a": account, "t": deliveries[0]["created_at"]},
            )
        conn.execute(revision._deliveries.insert(), deliveries)  # as the app wrote them
    engine.dispose()
    before = _rows(url, f"SELECT {COLUMNS} FROM event_delivery ORDER BY id")

    _alembic(url, "upgrade", "head")
    records = _rows(
        url, "SELECT id, account_id, delivery_count, deliveries FROM event_record ORDER BY id"
    )
    assert [(r[0], r[1], r[2]) for r in records] == [
        (first, accounts[0], 3),
        (second, accounts[1], 1),
        (third, accounts[0], 1),
    ]
    items = json.loads(records[0][3]) if isinstance(records[0][3], str) else records[0][3]
    assert [item[2] for item in items] == ["ed_1", "ed_2", "ed_3"]  # destination_id
    assert [item[0] for item in items] == [d["id"] for d in deliveries[:3]]
    assert items[1][3] == "failed"
    assert items[1][4]["error_code"] == "ERR_X"

    _alembic(url, "downgrade", "0020")
    assert _rows(url, f"SELECT {COLUMNS} FROM event_delivery ORDER BY id") == before
    _alembic(url, "upgrade", "head")
    assert migrate.upgrade(url) == migrate.head()


def test_implied_delivery_ids_are_written_out_on_a_downgrade(url, monkeypatch):  # noqa: F811
    """Revision 0023: rows stored before it keep the deliveries' ids they hold, rows written
    after it imply them; both read the same, and a downgrade to 0022 writes the implied ids
    into the rows, the ids the app showed."""
    revision = importlib.import_module(
        "tunnelgw.migrations.versions.0023_event_delivery_ids_implied"
    )
    monkeypatch.setattr(revision, "BATCH", 1)  # each row its own batch
    _alembic(url, "upgrade", "head")
    account = ids.new_id("acct")
    at = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)
    older = ids.new_id("ev")
    older_items = [[ids.new_id("evd"), "esb_1", "ed_1", "delivered", None]]
    newer = ids.new_id("ev", reserve=2)
    error = {"status_code": 500, "error_code": "ERR_X", "rule": "flt_1"}
    newer_items = [["esb_1", "ed_1", "delivered", None], ["esb_1", "ed_2", "failed", error]]
    engine = create_engine(migrate.sync_url(url))
    with engine.begin() as conn:
        conn.execute(
            sa.text("INSERT INTO account (id, name, created_at) VALUES (:a, '', :t)"),
            {"a": account, "t": at},
        )
        for event_id, items in ((older, older_items), (newer, newer_items)):
            conn.execute(
                sa.text(
                    "INSERT INTO event_record (id, account_id, created_at, event_type, event, "
                    "deliveries, delivery_count) VALUES (:id, :a, :t, 'x.v0', '{}', :d, :n)"
                ),
                {"id": event_id, "a": account, "t": at, "d": json.dumps(items), "n": len(items)},
            )
    engine.dispose()

    def shown(event_id: str, items: list[Any]) -> list[Any]:
        return EventRecord.new(
            id=event_id,
            account_id=account,
            created_at=at,
            event_type="x.v0",
            event={},
            deliveries=items,
            delivery_count=len(items),
        ).with_ids(items)

    implied = ids.following(newer, "evd", 2)
    assert shown(older, older_items) == older_items
    assert shown(newer, newer_items) == [
        [implied[0], *newer_items[0]],
        [implied[1], *newer_items[1]],
    ]

    _alembic(url, "downgrade", "0022")
    stored = _rows(url, "SELECT id, deliveries FROM event_record ORDER BY id")
    loaded = [(r[0], json.loads(r[1]) if isinstance(r[1], str) else r[1]) for r in stored]
    assert loaded == [(older, older_items), (newer, shown(newer, newer_items))]
    _alembic(url, "upgrade", "head")
    assert migrate.upgrade(url) == migrate.head()
