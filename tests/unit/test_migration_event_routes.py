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


def test_0024_gives_stored_routes_their_rows_and_a_downgrade_writes_deliveries_back(url):  # noqa: F811
    """Revision 0024: each account's stored routes get their rows, by the digest the app
    computes; an event recorded before keeps its deliveries; on a downgrade, an event that
    names its route holds the route's deliveries again, and the table is keyed by id."""
    _alembic(url, "upgrade", "0023")
    routes = '{"api_key_created.v0": [["esb_1", "ed_1"], ["esb_2", "ed_1"]]}'
    before = [["esb_1", "ed_1", "delivered", None]]
    engine = create_engine(migrate.sync_url(url))
    with engine.begin() as conn:
        _insert(conn, "account", id="acct_a", name="", created_at=NOW, event_routes=routes)
        _insert(conn, "account", id="acct_b", name="", created_at=NOW)
        _event(conn, "ev_1", deliveries=json.dumps(before))
    engine.dispose()

    _alembic(url, "upgrade", "head")
    route = event_routes.parse(routes)["api_key_created.v0"]
    engine = create_engine(migrate.sync_url(url))
    with engine.begin() as conn:
        kept = conn.execute(sa.text("SELECT account_id, digest, deliveries FROM event_route"))
        assert [(a, d, _json(v)) for a, d, v in kept] == [("acct_a", route.digest, route.stored)]
        [(deliveries, named)] = conn.execute(sa.text("SELECT deliveries, route FROM event_record"))
        assert (_json(deliveries), named) == (before, None)
        _event(conn, "ev_2", deliveries=None, route=route.digest)
    engine.dispose()

    _alembic(url, "downgrade", "0023")
    engine = create_engine(migrate.sync_url(url))
    with engine.connect() as conn:
        stored = conn.execute(sa.text("SELECT id, deliveries FROM event_record ORDER BY id"))
        assert [(id_, _json(v)) for id_, v in stored] == [("ev_1", before), ("ev_2", route.stored)]
        assert not sa.inspect(conn).has_table("event_route")
        assert sa.inspect(conn).get_pk_constraint("event_record")["constrained_columns"] == ["id"]
    engine.dispose()
    _alembic(url, "upgrade", "head")


def _event(conn: Any, id_: str, **values: Any) -> None:
    count = 2 if values.get("route") else 1
    _insert(
        conn,
        "event_record",
        id=id_,
        account_id="acct_a",
        created_at=NOW,
        event_type="api_key_created.v0",
        event="{}",
        delivery_count=count,
        **values,
    )


def _json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) else value
