"""Revision 0022 (issue 31): each account of an older database gets the event routes its
subscriptions give, in the form the events service reads; a downgrade takes them away."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy import create_engine

from tests.unit.test_migrations import _alembic, url  # noqa: F401  (a fresh database)
from tunnelgw.migrations import migrate
from tunnelgw.services import event_routes

NOW = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)


def _insert(conn: Any, table: str, **values: Any) -> None:
    names = ", ".join(values)
    marks = ", ".join(f":{name}" for name in values)
    conn.execute(sa.text(f"INSERT INTO {table} ({names}) VALUES ({marks})"), values)


def _described(id_: str, account: str) -> dict[str, Any]:
    return {"id": id_, "account_id": account, "description": "", "metadata": "", "created_at": NOW}


def test_existing_subscriptions_give_each_account_its_routes(url):  # noqa: F811
    _alembic(url, "upgrade", "0021")
    engine = create_engine(migrate.sync_url(url))
    with engine.begin() as conn:
        for account in ("acct_a", "acct_b", "acct_c"):
            _insert(conn, "account", id=account, name="", created_at=NOW)
        for id_, account in (("ed_1", "acct_a"), ("ed_2", "acct_a"), ("ed_3", "acct_b")):
            target = '{"datadog": {"api_key": "x"}}'
            _insert(
                conn, "event_destination", **_described(id_, account), format="json", target=target
            )
        for id_, account in (("esb_2", "acct_a"), ("esb_1", "acct_a"), ("esb_3", "acct_b")):
            _insert(conn, "event_subscription", **_described(id_, account))
        sources = [
            ("esb_1", "api_key_created.v0", "acct_a"),
            ("esb_1", "api_key_deleted.v0", "acct_a"),
            ("esb_2", "api_key_created.v0", "acct_a"),
            ("esb_3", "tunnel_created.v0", "acct_b"),
        ]
        for subscription, type_, account in sources:
            _insert(
                conn,
                "event_source",
                subscription_id=subscription,
                type=type_,
                account_id=account,
                created_at=NOW,
            )
        # esb_3 has no destination: acct_b routes nothing, as acct_c, which has no subscription.
        for subscription, dest in (("esb_1", "ed_2"), ("esb_1", "ed_1"), ("esb_2", "ed_1")):
            _insert(
                conn,
                "event_subscription_destination",
                subscription_id=subscription,
                destination_id=dest,
                account_id="acct_a",
            )
    engine.dispose()

    _alembic(url, "upgrade", "head")
    engine = create_engine(migrate.sync_url(url))
    with engine.connect() as conn:
        stored = dict(conn.execute(sa.text("SELECT id, event_routes FROM account")).all())
    engine.dispose()
    assert json.loads(stored["acct_a"]) == {
        "api_key_created.v0": [["esb_1", "ed_1"], ["esb_1", "ed_2"], ["esb_2", "ed_1"]],
        "api_key_deleted.v0": [["esb_1", "ed_1"], ["esb_1", "ed_2"]],
    }
    assert event_routes.parse(stored["acct_a"])["api_key_deleted.v0"].pairs == (
        ("esb_1", "ed_1"),
        ("esb_1", "ed_2"),
    )
    assert (stored["acct_b"], stored["acct_c"]) == (None, None)

    _alembic(url, "downgrade", "0021")
    engine = create_engine(migrate.sync_url(url))
    columns = [column["name"] for column in sa.inspect(engine).get_columns("account")]
    engine.dispose()
    assert "event_routes" not in columns
