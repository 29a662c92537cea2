"""Issue 23, events that fire: each create, update and delete of a kind in the event type
catalog is sent (recorded) to every destination of the account's subscriptions with that type
among their sources, in the change's transaction; `GET /_admin/events` reads the record."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import func, select
from sqlmodel import col

from tests.factories import assert_error
from tunnelgw.core import ids, timefmt
from tunnelgw.models import EventRecord, EventRoute
from tunnelgw.storage.db import Database
from tunnelgw.testing import TunnelgwServer

KEYS = "/api_keys"
KEY_TYPES = ["api_key_created.v0", "api_key_updated.v0", "api_key_deleted.v0"]


def destination(client: Any) -> str:
    made = client.post("/event_destinations", json={"target": {"datadog": {"api_key": "dd-x"}}})
    assert made.status_code == 201, made.text
    return str(made.json()["id"])


def subscribe(client: Any, types: list[str], destination_ids: list[str]) -> str:
    made = client.post(
        "/event_subscriptions",
        json={"sources": [{"type": t} for t in types], "destination_ids": destination_ids},
    )
    assert made.status_code == 201, made.text
    return str(made.json()["id"])


def events(client: Any, **params: Any) -> list[dict[str, Any]]:
    answer = client.get("/_admin/events", params=params)
    assert answer.status_code == 200, answer.text
    items: list[dict[str, Any]] = answer.json()["events"]
    return items


def count(client: Any, **params: Any) -> int:
    answer = client.get("/_admin/events/count", params=params)
    assert answer.status_code == 200, answer.text
    return int(answer.json()["count"])


def test_a_created_key_fires_its_event_with_the_platforms_envelope(admin):
    dest = destination(admin)
    sub = subscribe(admin, ["api_key_created.v0"], [dest])
    before = datetime.now(UTC).replace(microsecond=0)
    made = admin.post(KEYS, json={"description": "ci"}).json()
    [item] = events(admin)
    assert item["id"].startswith("evd_")
    assert (item["subscription_id"], item["destination_id"]) == (sub, dest)
    assert (item["outcome"], item["error"]) == ("delivered", None)
    event = item["event"]
    assert set(event) == {"event_id", "event_type", "event_timestamp", "object"}
    assert event["event_id"].startswith("ev_")
    assert event["event_type"] == "api_key_created.v0"
    fired = timefmt.parse_rfc3339(event["event_timestamp"])
    assert before <= fired <= datetime.now(UTC) + timedelta(seconds=1)
    # The object is the key as the API returns it; the one-time token is not sent.
    assert made["token"]
    assert event["object"] == {**made, "token": None}
    assert event["object"] == admin.get(f"{KEYS}/{made['id']}").json()


def test_updates_and_deletes_fire_their_events_in_order(admin):
    dest = destination(admin)
    subscribe(admin, KEY_TYPES, [dest])
    key = admin.post(KEYS, json={}).json()
    updated = admin.patch(f"{KEYS}/{key['id']}", json={"description": "renamed"}).json()
    assert admin.delete(f"{KEYS}/{key['id']}").status_code == 204
    sent = events(admin)
    assert [item["event"]["event_type"] for item in sent] == KEY_TYPES
    assert sent[1]["event"]["object"] == updated
    assert sent[2]["event"]["object"] == updated  # the key as it was when deleted
    assert len({item["event"]["event_id"] for item in sent}) == 3
    assert [item["id"] for item in sent] == sorted(item["id"] for item in sent)
    assert count(admin) == 3
    assert count(admin, type="api_key_updated.v0") == 1
    assert [i["event"]["event_type"] for i in events(admin, type="api_key_deleted.v0")] == [
        "api_key_deleted.v0"
    ]
    assert events(admin, limit=1) == sent[:1]


def test_an_update_that_changes_nothing_fires_nothing(admin):
    dest = destination(admin)
    subscribe(admin, ["api_key_updated.v0"], [dest])
    key = admin.post(KEYS, json={"description": "same"}).json()
    assert admin.patch(f"{KEYS}/{key['id']}", json={"description": "same"}).status_code == 200
    assert events(admin) == []


def test_each_destination_receives_the_event_once(admin):
    first, second = destination(admin), destination(admin)
    sub = subscribe(admin, ["api_key_created.v0"], [first, second])
    admin.post(KEYS, json={})
    sent = events(admin)
    assert sorted(item["destination_id"] for item in sent) == sorted([first, second])
    assert {item["subscription_id"] for item in sent} == {sub}
    assert sent[0]["event"] == sent[1]["event"]  # one event, sent twice
    assert [i["destination_id"] for i in events(admin, destination_id=first)] == [first]
    assert count(admin, destination_id=second) == 1
    assert count(admin, subscription_id=sub) == 2


def test_types_not_subscribed_and_other_accounts_fire_nothing_here(admin, other):
    dest = destination(admin)
    subscribe(admin, ["api_key_deleted.v0"], [dest])
    admin.post(KEYS, json={})  # created: not subscribed
    admin.post("/ip_policies", json={})  # another kind
    # Another account's changes never reach this account's subscriptions, and this
    # account's never reach another's.
    other_dest = destination(other)
    subscribe(other, ["api_key_created.v0"], [other_dest])
    other.post(KEYS, json={})
    assert events(admin) == []
    admin.post(KEYS, json={})
    assert len(events(other)) == 1


def test_a_subscription_without_destinations_sends_nothing(admin):
    subscribe(admin, ["api_key_created.v0"], [])
    admin.post(KEYS, json={})
    assert events(admin) == []


def test_a_refused_change_fires_nothing(admin):
    dest = destination(admin)
    subscribe(admin, ["ip_restriction_created.v0", "ip_policy_created.v0"], [dest])
    # Refused after the restriction row was inserted in the unit: its policy is unknown.
    missing = ids.new_id("ipp")
    answer = admin.post("/ip_restrictions", json={"type": "dashboard", "ip_policy_ids": [missing]})
    assert_error(answer, 404, "ERR_REFERENCE_NOT_FOUND")
    assert admin.get("/ip_restrictions").json()["ip_restrictions"] == []
    assert events(admin) == []
    policy = admin.post("/ip_policies", json={}).json()["id"]
    made = admin.post("/ip_restrictions", json={"type": "dashboard", "ip_policy_ids": [policy]})
    assert made.status_code == 201
    sent = events(admin)
    assert [item["event"]["event_type"] for item in sent] == [
        "ip_policy_created.v0",
        "ip_restriction_created.v0",
    ]
    assert sent[1]["event"]["object"] == made.json()  # with its policies


@pytest.mark.inprocess  # runs a unit on the app's database
def test_a_rolled_back_unit_fires_nothing(admin, factory):
    from tunnelgw.models import ApiKey
    from tunnelgw.services import events as event_service
    from tunnelgw.storage import db

    dest = destination(admin)
    subscribe(admin, ["api_key_created.v0"], [dest])
    account = admin.creds.account_id

    class Refused(Exception):  # noqa: N818 - a refusal, not an error of the test
        pass

    def key() -> Any:
        return ApiKey.new(
            id=ids.new_id(ApiKey.PREFIX),
            account_id=account,
            owner_id=admin.creds.principal_id,
            token_hash="x" * 64,
        )

    async def change(fail: bool) -> None:
        token = event_service.activate()
        try:
            async with db.write() as unit:
                unit.add(key())
                await unit.flush()
                if fail:
                    raise Refused
        finally:
            event_service.deactivate(token)

    with pytest.raises(Refused):
        factory._run(change, True)
    assert events(admin) == []
    factory._run(change, False)  # the same unit committed fires (the test can fail)
    assert len(events(admin)) == 1


def test_subscription_changes_fire_with_sources_and_destinations(admin):
    dest = destination(admin)
    types = [f"event_subscription_{action}.v0" for action in ("created", "updated", "deleted")]
    watcher = subscribe(admin, types, [dest])
    assert [i["event"]["event_type"] for i in events(admin)] == ["event_subscription_created.v0"]
    created = events(admin)[0]["event"]["object"]
    assert created == admin.get(f"/event_subscriptions/{watcher}").json()
    # A source added is its subscription's update, shown with the new source.
    source = admin.post(
        f"/event_subscriptions/{watcher}/sources", json={"type": "ip_policy_created.v0"}
    )
    assert source.status_code == 201, source.text
    [update] = events(admin, type="event_subscription_updated.v0")
    assert update["event"]["object"] == admin.get(f"/event_subscriptions/{watcher}").json()
    assert "ip_policy_created.v0" in [s["type"] for s in update["event"]["object"]["sources"]]
    # Its deletion is sent (as it was) by the other subscriptions watching deletions; it is
    # gone itself when the event fires.
    second = subscribe(admin, ["event_subscription_deleted.v0"], [dest])
    shape = admin.get(f"/event_subscriptions/{watcher}").json()
    assert admin.delete(f"/event_subscriptions/{watcher}").status_code == 204
    [deleted] = events(admin, type="event_subscription_deleted.v0")
    assert deleted["event"]["object"] == shape
    assert (deleted["subscription_id"], deleted["destination_id"]) == (second, dest)


def test_deliveries_outlive_their_destination(admin):
    dest = destination(admin)
    sub = subscribe(admin, ["api_key_created.v0"], [dest])
    admin.post(KEYS, json={})
    assert admin.delete(f"/event_subscriptions/{sub}").status_code == 204
    assert admin.delete(f"/event_destinations/{dest}").status_code == 204
    assert [item["destination_id"] for item in events(admin, destination_id=dest)] == [dest]


def test_since_filters_by_the_time_sent(admin):
    dest = destination(admin)
    subscribe(admin, ["api_key_created.v0"], [dest])
    admin.post(KEYS, json={})
    sent = events(admin)[0]["created_at"]
    assert count(admin, since=sent) == 1
    later = timefmt.rfc3339(timefmt.parse_rfc3339(sent) + timedelta(seconds=1))
    assert count(admin, since=later) == 0
    assert events(admin, since="2000-01-01T00:00:00+02:00") == events(admin)
    for bad in ("yesterday", "2030-13-01T00:00:00Z", "0001-01-01T00:00:00+23:59"):
        for path in ("/_admin/events", "/_admin/events/count"):
            answer = admin.get(path, params={"since": bad})
            assert assert_error(answer, 400, "ERR_INVALID_PARAMETER")["details"]["param"] == "since"


def test_filters_are_checked(admin):
    for params in ({"type": "nope.v0"}, {"destination_id": "ipp_x"}, {"limit": 0}):
        assert admin.get("/_admin/events", params=params).status_code == 400


def test_the_event_timestamp_follows_the_accounts_clock(admin):
    dest = destination(admin)
    subscribe(admin, ["api_key_created.v0"], [dest])
    admin.post("/_admin/clock", json={"advance_seconds": 86400})
    admin.post(KEYS, json={})
    fired = timefmt.parse_rfc3339(events(admin)[0]["event"]["event_timestamp"])
    assert fired >= datetime.now(UTC) + timedelta(seconds=86400 - 5)


@pytest.mark.inprocess  # sets the serving app's settings
def test_deliveries_are_bounded_per_account(admin, other, settings, monkeypatch):
    dest, other_dest = destination(admin), destination(other)
    subscribe(admin, ["api_key_created.v0"], [dest])
    subscribe(other, ["api_key_created.v0"], [other_dest])
    other.post(KEYS, json={})
    monkeypatch.setattr(settings, "event_deliveries_max", 3)
    made = [admin.post(KEYS, json={}).json()["id"] for _ in range(5)]
    kept = events(admin)
    assert [item["event"]["object"]["id"] for item in kept] == made[2:]  # the oldest dropped
    assert count(other) == 1  # another account's are not its to drop


@pytest.mark.inprocess  # sets the serving app's settings, reads its database
def test_reads_stop_at_the_bound_before_the_oldest_are_deleted(
    admin, factory, settings, monkeypatch
):
    from tunnelgw.storage import db

    subscribe(admin, ["api_key_created.v0"], [destination(admin)])
    monkeypatch.setattr(settings, "event_deliveries_max", 20)  # deleted 10 (half) at a time

    async def stored() -> int:
        async with db.read() as unit:
            mine = col(EventRecord.account_id) == admin.creds.account_id
            return int(
                (await unit.exec(select(func.count()).select_from(EventRecord).where(mine))).one()
            )

    made = [admin.post(KEYS, json={}).json()["id"] for _ in range(21)]
    assert factory._run(stored) == 21  # one past the bound, kept until a second one comes
    assert [item["event"]["object"]["id"] for item in events(admin)] == made[1:]
    assert count(admin) == 20
    assert count(admin, since=events(admin)[0]["created_at"]) == 20
    more = [admin.post(KEYS, json={}).json()["id"] for _ in range(8)]
    assert factory._run(stored) == 29  # 9 written since the last delete: still waiting
    assert [item["event"]["object"]["id"] for item in events(admin)] == (made + more)[9:]
    admin.post(KEYS, json={})  # the 10th
    assert factory._run(stored) == 20


@pytest.mark.inprocess  # sets the serving app's settings
def test_the_bound_counts_deliveries_and_may_keep_part_of_an_event(admin, settings, monkeypatch):
    """An event is stored once with its deliveries; the bound is on deliveries, so the
    oldest kept event may show only its newest."""
    dests = [destination(admin) for _ in range(3)]
    subscribe(admin, ["api_key_created.v0"], dests)
    monkeypatch.setattr(settings, "event_deliveries_max", 4)
    first, second = (admin.post(KEYS, json={}).json()["id"] for _ in range(2))
    kept = events(admin)
    assert [item["event"]["object"]["id"] for item in kept] == [first, *[second] * 3]
    assert [item["destination_id"] for item in kept] == [dests[2], *dests]
    assert [item["id"] for item in kept] == sorted(item["id"] for item in kept)
    assert count(admin) == 4
    assert count(admin, destination_id=dests[0]) == 1  # the first event's is past the bound
    assert count(admin, destination_id=dests[2]) == 2
    assert [item["destination_id"] for item in events(admin, limit=2)] == dests[2:] + dests[:1]
    assert count(admin, type="api_key_created.v0") == 4
    assert count(admin, type="api_key_deleted.v0") == 0


@pytest.mark.inprocess  # sets the serving app's settings, reads in small chunks
def test_filtered_reads_go_past_a_chunk_of_events(admin, settings, monkeypatch):
    from tunnelgw.services import events as service

    monkeypatch.setattr(service, "_CHUNK", 2)
    dest, other_dest = destination(admin), destination(admin)
    subscribe(admin, ["api_key_created.v0"], [dest])
    subscribe(admin, ["api_key_deleted.v0"], [other_dest])
    made = []
    for _ in range(3):
        made.append(admin.post(KEYS, json={}).json()["id"])
        assert admin.delete(f"{KEYS}/{made[-1]}").status_code == 204
    mine = events(admin, destination_id=dest)
    assert [item["event"]["object"]["id"] for item in mine] == made
    assert count(admin, destination_id=other_dest) == 3
    assert len(events(admin, destination_id=dest, limit=2)) == 2
    assert count(admin) == 6


def test_reset_clears_the_deliveries(admin, other):
    for client in (admin, other):
        subscribe(client, ["api_key_created.v0"], [destination(client)])
        client.post(KEYS, json={})
    answer = admin.post("/_admin/reset").json()
    assert answer["deleted"]["event_record"] == 1
    assert events(admin) == []
    assert count(other) == 1


# --- failing destinations -------------------------------------------------------------------


def test_a_fault_rule_fails_a_delivery_and_the_change_still_succeeds(admin):
    failing, working = destination(admin), destination(admin)
    subscribe(admin, ["api_key_created.v0"], [failing, working])
    rule = admin.post(
        "/_admin/faults",
        json={
            "operation": "event_destinations.deliver",
            "destination_id": failing,
            "status": 503,
            "count": 1,
        },
    )
    assert rule.status_code == 201, rule.text
    assert rule.json()["destination_id"] == failing
    assert admin.post(KEYS, json={}).status_code == 201
    outcomes = {item["destination_id"]: item for item in events(admin)}
    assert outcomes[working]["outcome"] == "delivered"
    assert outcomes[failing]["outcome"] == "failed"
    assert outcomes[failing]["error"] == {
        "status_code": 503,
        "error_code": "ERR_SERVICE_UNAVAILABLE",
        "rule": rule.json()["id"],
    }
    # Its one hit is spent: the next delivery arrives (a failed one is not sent again).
    assert admin.get("/_admin/faults").json() == {"faults": []}
    admin.post(KEYS, json={})
    assert [i["outcome"] for i in events(admin, destination_id=failing)] == ["failed", "delivered"]


def test_a_rule_without_a_destination_fails_every_delivery(admin):
    dest = destination(admin)
    subscribe(admin, ["api_key_created.v0"], [dest])
    admin.post("/_admin/faults", json={"operation": "event_destinations.deliver", "status": 429})
    admin.post(KEYS, json={})
    admin.post(KEYS, json={})
    assert [i["error"]["status_code"] for i in events(admin)] == [429, 429]
    assert len(admin.get("/_admin/faults").json()["faults"]) == 1  # until cleared


def test_deliveries_read_rules_again_once_a_rule_is_made_after_a_clear(admin):
    dest = destination(admin)
    subscribe(admin, ["api_key_created.v0"], [dest])
    rule = {"operation": "event_destinations.deliver", "status": 503}
    assert admin.post("/_admin/faults", json=rule).status_code == 201
    admin.post(KEYS, json={})
    assert admin.delete("/_admin/faults").status_code == 204
    admin.post(KEYS, json={})  # the account has no rules: its deliveries read none
    assert admin.post("/_admin/faults", json=rule).status_code == 201
    admin.post(KEYS, json={})
    assert [i["outcome"] for i in events(admin)] == ["failed", "delivered", "failed"]


def test_deliveries_read_rules_as_the_credential_check_found_them(admin, other, factory):
    """The caller's account had no fault rules when its credential was checked: its
    deliveries read none (a rule made meanwhile counts from its next request); another
    account's, changed in the same request, read theirs."""
    from tunnelgw.models import ApiKey
    from tunnelgw.services import events as event_service
    from tunnelgw.services.auth import Caller
    from tunnelgw.storage import db

    rule = {"operation": "event_destinations.deliver", "status": 503}
    for client in (admin, other):
        subscribe(client, ["api_key_created.v0"], [destination(client)])
        assert client.post("/_admin/faults", json=rule).status_code == 201

    def key(client: Any) -> Any:
        return ApiKey.new(
            id=ids.new_id(ApiKey.PREFIX),
            account_id=client.creds.account_id,
            owner_id=client.creds.principal_id,
            token_hash=ids.new_secret(),
        )

    async def change() -> None:
        caller = Caller(admin.creds.account_id, admin.creds.principal_id, True, None)
        token = event_service.activate()
        try:
            event_service.known(caller)  # subscriptions, and no fault rules
            async with db.write() as unit:
                unit.add_all([key(admin), key(other)])
        finally:
            event_service.deactivate(token)

    factory._run(change)
    assert [i["outcome"] for i in events(admin)] == ["delivered"]
    assert [i["outcome"] for i in events(other)] == ["failed"]


def test_rules_decide_each_delivery_in_order_of_destination_and_rule(admin):
    first, second, third = (destination(admin) for _ in range(3))
    subscribe(admin, ["api_key_created.v0"], [third, first, second])  # sent in id order
    deliver = "event_destinations.deliver"
    rules = [
        {"operation": deliver, "destination_id": first, "status": 503, "count": 2},
        {"operation": deliver, "status": 429, "count": 1},  # every destination
    ]
    made = [admin.post("/_admin/faults", json=rule).json()["id"] for rule in rules]
    for _ in range(3):
        assert admin.post(KEYS, json={}).status_code == 201
    sent = [
        (item["destination_id"], item["outcome"], (item["error"] or {}).get("rule"))
        for item in events(admin)
    ]
    assert sent == [
        (first, "failed", made[0]),
        (second, "failed", made[1]),  # the first rule is not its own
        (third, "delivered", None),  # the second rule's one hit was taken
        (first, "failed", made[0]),
        (second, "delivered", None),
        (third, "delivered", None),
        (first, "delivered", None),
        (second, "delivered", None),
        (third, "delivered", None),
    ]
    assert len({item["event"]["event_id"] for item in events(admin, destination_id=first)}) == 3


def test_delivery_rules_are_checked(admin, other):
    deliver = "event_destinations.deliver"
    body = assert_error(
        admin.post("/_admin/faults", json={"operation": deliver, "latency_ms": 5}),
        400,
        "ERR_MISSING_FIELD",
    )
    assert body["details"]["field"] == "status"
    body = assert_error(
        admin.post("/_admin/faults", json={"operation": deliver, "status": 503, "latency_ms": 5}),
        400,
        "ERR_INVALID_FIELD",
    )
    assert body["details"]["field"] == "latency_ms"
    dest = destination(admin)
    body = assert_error(
        admin.post(
            "/_admin/faults",
            json={"operation": "api_keys.list", "status": 503, "destination_id": dest},
        ),
        400,
        "ERR_INVALID_FIELD",
    )
    assert body["details"]["field"] == "destination_id"
    body = assert_error(
        admin.post(
            "/_admin/faults",
            json={"operation": deliver, "status": 503, "destination_id": destination(other)},
        ),
        404,
        "ERR_REFERENCE_NOT_FOUND",
    )
    assert admin.get("/_admin/faults").json() == {"faults": []}


def test_a_fixtures_direct_rows_fire_nothing_and_its_api_items_do(admin):
    dest = destination(admin)
    types = ["tunnel_created.v0", "http_response_backend_created.v0", "api_key_created.v0"]
    subscribe(admin, types, [dest])
    document = {
        "version": 1,
        "tunnels": [{"ref": "t1"}],
        "api": {"http_response_backends": [{"ref": "b1", "body": "x"}]},
    }
    answer = admin.post("/_admin/fixtures", json=document)
    assert answer.status_code == 200, answer.text
    sent = events(admin)
    # The loader's temporary key and the tunnel row fire nothing.
    assert [item["event"]["event_type"] for item in sent] == ["http_response_backend_created.v0"]
    backend = admin.get(f"/backends/http_response/{answer.json()['labels']['b1']}").json()
    assert sent[0]["event"]["object"] == backend  # addresses of this server included


def test_a_simulated_agents_tunnels_and_endpoints_fire(admin):
    dest = destination(admin)
    types = [
        f"{kind}_{action}.v0"
        for kind in ("tunnel", "endpoint")
        for action in ("created", "deleted")
    ]
    subscribe(admin, types, [dest])
    token = admin.post("/credentials", json={}).json()["token"]
    started = admin.post(
        "/_admin/agent_sessions",
        json={"authtoken": token, "endpoints": [{"url": "https://agent-events.internal"}]},
    )
    assert started.status_code == 201, started.text
    sent = {item["event"]["event_type"]: item["event"]["object"] for item in events(admin)}
    assert sent["tunnel_created.v0"]["id"] == started.json()["tunnels"][0]["id"]
    assert sent["endpoint_created.v0"]["id"] == started.json()["endpoints"][0]["id"]
    assert (
        sent["endpoint_created.v0"]
        == admin.get(f"/endpoints/{sent['endpoint_created.v0']['id']}").json()
    )
    # The agent goes away: its endpoints and tunnels go, each firing its deletion.
    session = started.json()["tunnel_session"]["id"]
    assert admin.delete(f"/_admin/agent_sessions/{session}").status_code == 204
    gone = [
        item["event"]
        for item in events(admin)
        if item["event"]["event_type"].endswith("_deleted.v0")
    ]
    assert [(e["event_type"], e["object"]["id"]) for e in gone] == [
        ("endpoint_deleted.v0", sent["endpoint_created.v0"]["id"]),
        ("tunnel_deleted.v0", sent["tunnel_created.v0"]["id"]),
    ]


def test_events_admin_operations_are_for_admins(factory, admin):
    user = factory.principal(admin.creds.account_id, admin=False)
    for path in ("/_admin/events", "/_admin/events/count"):
        assert_error(user.get(path), 403, "ERR_PERMISSION_DENIED")
        assert_error(admin.get(path, token=None), 401, "ERR_AUTHENTICATION_REQUIRED")


@pytest.mark.inprocess  # renders in a unit on the app's database
def test_an_https_edge_renders_with_its_routes(admin, factory):
    """HTTPS edges and their routes come from fixtures (no API writes them), so no request
    fires their events; their rendering is the API's all the same."""
    from tunnelgw.models import Edge
    from tunnelgw.services import events as event_service
    from tunnelgw.storage import db

    document = {
        "version": 1,
        "edges": [{"ref": "e", "kind": "https"}],
        "edge_routes": [{"ref": "r", "edge_id": "@e", "match": "/api"}],
    }
    answer = admin.post("/_admin/fixtures", json=document)
    assert answer.status_code == 200, answer.text
    edge_id = answer.json()["labels"]["e"]
    shown = admin.get(f"/edges/https/{edge_id}").json()
    assert len(shown["routes"]) == 1

    async def render() -> Any:
        from tunnelgw.core import urls

        urls.set_base("http://testserver")
        async with db.read() as unit:
            return await event_service.render(unit, await unit.get(Edge, edge_id))

    assert factory._run(render) == shown


def test_kill_9_after_a_2xx_keeps_the_event(tmp_path):
    """The event is in the change's transaction: once the create is answered, killing the
    server at once (SIGKILL, no shutdown) loses nothing."""
    url = os.environ.get("TUNNELGW_TEST_DATABASE_URL") or f"sqlite:///{tmp_path / 'kill.db'}"
    with TunnelgwServer(database_url=url) as server:
        with server.client() as client:
            dest = destination(client)
            subscribe(client, ["api_key_created.v0"], [dest])
            made = client.post("/api_keys", json={})
            assert made.status_code == 201
        os.killpg(server.pid, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while server.running and time.monotonic() < deadline:
            time.sleep(0.05)
        account = server.account_id

    async def stored() -> tuple[list[Any], list[Any]]:
        database = Database(url)
        try:
            async with database.read() as unit:
                where = '"account_id" = ' + unit.mark
                events = await unit.select(EventRecord, where, [account])
                return events, await unit.select(EventRoute, where, [account])
        finally:
            await database.dispose()

    [row], [route] = asyncio.run(stored())
    assert row.event["object"]["id"] == made.json()["id"]
    # Delivered: the event names its route, whose row holds the deliveries once for all.
    assert row.deliveries is None
    assert row.route == route.digest
    items = row.with_ids(route.deliveries)
    assert [row.delivery_api(item)["destination_id"] for item in items] == [dest]
    # Stored without its id, which is the value the event's id reserved after its own.
    assert route.deliveries == [[items[0][1], dest, "delivered", None]]
    assert [item[0] for item in items] == ids.following(row.id, "evd", 1)


def test_a_source_removed_is_its_subscriptions_update(admin):
    dest = destination(admin)
    sub = subscribe(admin, ["event_subscription_updated.v0", "ip_policy_created.v0"], [dest])
    removed = admin.delete(f"/event_subscriptions/{sub}/sources/ip_policy_created.v0")
    assert removed.status_code == 204
    [update] = events(admin, type="event_subscription_updated.v0")
    assert update["event"]["object"] == admin.get(f"/event_subscriptions/{sub}").json()
    assert [s["type"] for s in update["event"]["object"]["sources"]] == [
        "event_subscription_updated.v0"
    ]


def test_a_rule_that_seldom_hits_lets_deliveries_through(admin):
    dest = destination(admin)
    subscribe(admin, ["api_key_created.v0"], [dest])
    rule = {"operation": "event_destinations.deliver", "status": 500, "probability": 1e-12}
    assert admin.post("/_admin/faults", json=rule).status_code == 201
    admin.post(KEYS, json={})
    assert [item["outcome"] for item in events(admin)] == ["delivered"]
