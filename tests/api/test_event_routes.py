"""Issue 31: an account keeps its event routes on its row (`Account.event_routes`): the
(subscription, destination) pairs of each event type, as every change of its subscriptions,
their sources and destinations leaves them, and as a reset and a snapshot load leave them.
The credential check reads them, and a change fires by them."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta
from typing import Any

from tests.api.test_events import destination, events, subscribe
from tunnelgw.models import Account, EventRecord, EventRoute
from tunnelgw.models.event_route import RETIRED_FOR, digest_of
from tunnelgw.storage import db

KEYS = "/api_keys"
SUBSCRIPTIONS = "/event_subscriptions"


def stored(factory: Any, account_id: str) -> dict[str, list[list[str]]] | None:
    """The routes kept on the account's row, as stored."""

    async def read() -> str | None:
        async with db.read() as unit:
            account = await unit.get(Account, account_id)
            assert account is not None
            return account.event_routes

    text = factory._run(read)
    return None if text is None else json.loads(text)


def routes_shown(client: Any) -> dict[str, list[list[str]]] | None:
    """The routes the account's subscriptions give, as the API shows them."""
    listed = client.get(SUBSCRIPTIONS, params={"limit": 100})
    assert listed.status_code == 200, listed.text
    found: dict[str, list[list[str]]] = {}
    for subscription in sorted(listed.json()["event_subscriptions"], key=lambda s: s["id"]):
        for source in subscription["sources"]:
            for destination_id in sorted(ref["id"] for ref in subscription["destinations"]):
                found.setdefault(source["type"], []).append([subscription["id"], destination_id])
    return found or None


def kept(client: Any, factory: Any) -> dict[str, list[list[str]]] | None:
    found = stored(factory, client.creds.account_id)
    assert found == routes_shown(client)
    return found


def test_every_change_of_subscriptions_sources_and_destinations_keeps_the_routes(admin, factory):
    assert kept(admin, factory) is None
    first, second = destination(admin), destination(admin)
    one = subscribe(admin, ["api_key_created.v0", "api_key_deleted.v0"], [first])
    assert kept(admin, factory) == {
        "api_key_created.v0": [[one, first]],
        "api_key_deleted.v0": [[one, first]],
    }
    two = subscribe(admin, ["api_key_created.v0"], [first, second])
    assert len(kept(admin, factory)["api_key_created.v0"]) == 3  # type: ignore[index]

    # A subscription's destinations replaced, then its sources.
    patched = admin.patch(f"{SUBSCRIPTIONS}/{one}", json={"destination_ids": [second]})
    assert patched.status_code == 200, patched.text
    assert [one, second] in kept(admin, factory)["api_key_deleted.v0"]  # type: ignore[index]
    patched = admin.patch(
        f"{SUBSCRIPTIONS}/{one}", json={"sources": [{"type": "ip_policy_created.v0"}]}
    )
    assert patched.status_code == 200, patched.text
    assert set(kept(admin, factory)) == {"api_key_created.v0", "ip_policy_created.v0"}  # type: ignore[arg-type]

    # A source added and one removed through the sources of a subscription.
    added = admin.post(f"{SUBSCRIPTIONS}/{two}/sources", json={"type": "api_key_updated.v0"})
    assert added.status_code == 201, added.text
    assert kept(admin, factory)["api_key_updated.v0"] == [[two, first], [two, second]]  # type: ignore[index]
    removed = admin.delete(f"{SUBSCRIPTIONS}/{two}/sources/api_key_created.v0")
    assert removed.status_code == 204, removed.text
    assert set(kept(admin, factory)) == {"api_key_updated.v0", "ip_policy_created.v0"}  # type: ignore[arg-type]

    # A key updated fires by what is kept: the two destinations of `two`.
    key = admin.post(KEYS, json={}).json()
    assert admin.patch(f"{KEYS}/{key['id']}", json={"description": "x"}).status_code == 200
    fired = events(admin, type="api_key_updated.v0")
    assert sorted((i["subscription_id"], i["destination_id"]) for i in fired) == sorted(
        [(two, first), (two, second)]
    )

    # Deleting the subscriptions leaves none.
    assert admin.delete(f"{SUBSCRIPTIONS}/{one}").status_code == 204
    assert set(kept(admin, factory)) == {"api_key_updated.v0"}  # type: ignore[arg-type]
    assert admin.delete(f"{SUBSCRIPTIONS}/{two}").status_code == 204
    assert kept(admin, factory) is None
    admin.post(KEYS, json={})
    assert events(admin, type="api_key_created.v0") == []


def test_another_key_of_the_account_fires_by_routes_another_key_made(admin, factory):
    """The routes are the account's, whichever credential changed them or reads them."""
    other = factory.client(admin.post(KEYS, json={}).json()["token"])
    other.creds = admin.creds
    sub = subscribe(admin, ["http_response_backend_created.v0"], [destination(admin)])
    made = other.post("/backends/http_response", json={"body": "hi", "status_code": 200})
    assert made.status_code == 201, made.text
    [fired] = events(admin)[-1:]
    assert (fired["subscription_id"], fired["event"]["object"]["id"]) == (sub, made.json()["id"])


def test_reset_clears_the_routes_and_a_snapshot_load_brings_them_back(admin, factory):
    dest = destination(admin)
    sub = subscribe(admin, ["api_key_created.v0"], [dest])
    snapshot = admin.get("/_admin/snapshot")
    assert snapshot.status_code == 200, snapshot.text
    assert admin.post("/_admin/reset").status_code == 200
    assert kept(admin, factory) is None

    loaded = admin.post("/_admin/fixtures", json=snapshot.json())
    assert loaded.status_code == 200, loaded.text
    assert kept(admin, factory) == {"api_key_created.v0": [[sub, dest]]}
    admin.post(KEYS, json={})
    assert [i["subscription_id"] for i in events(admin, type="api_key_created.v0")] == [sub]


def test_two_subscriptions_changed_at_once_both_count(admin, factory):
    """Two units that change one account's routes at the same time (on PostgreSQL, two
    connections) store them one after the other: neither loses the other's change."""
    from tunnelgw.services import event_subscriptions
    from tunnelgw.services import events as event_service
    from tunnelgw.services.auth import Caller

    first, second = destination(admin), destination(admin)
    subscriptions = [subscribe(admin, ["api_key_created.v0"], [first]) for _ in range(4)]
    caller = Caller(admin.creds.account_id, admin.creds.principal_id, True, None)

    async def relink(subscription_id: str) -> None:
        token = event_service.activate()
        try:
            event_service.known(caller)
            await event_subscriptions.update(caller, subscription_id, {}, [second])
        finally:
            event_service.deactivate(token)

    async def at_once() -> None:
        await asyncio.gather(*(relink(id_) for id_ in subscriptions))

    factory._run(at_once)
    assert kept(admin, factory) == {
        "api_key_created.v0": [[id_, second] for id_ in sorted(subscriptions)]
    }


def test_routes_changed_while_other_changes_lock_the_account(admin, factory):
    """Changes of the routes (`FOR NO KEY UPDATE` on the account, after their inserts took
    `FOR KEY SHARE` on it) at the same time as other changes that lock the account (an IP
    restriction, a fault rule; with `FOR UPDATE`, as they took before, they deadlocked):
    on PostgreSQL each request has a connection of its own, and every one must succeed
    (no deadlock aborts one), with all the route changes kept."""
    import httpx

    first, second = destination(admin), destination(admin)
    subscriptions = [subscribe(admin, ["ip_restriction_created.v0"], [first]) for _ in range(3)]
    policy = admin.post("/ip_policies", json={}).json()["id"]
    headers = {"Authorization": f"Bearer {admin.token}", "Service-Version": "2"}
    calls: list[tuple[str, str, dict[str, Any]]] = [
        *(
            ("PATCH", f"{SUBSCRIPTIONS}/{id_}", {"destination_ids": [second]})
            for id_ in subscriptions
        ),
        *(("POST", "/ip_restrictions", {"type": "dashboard", "ip_policy_ids": [policy]}),) * 3,
        *(("POST", "/_admin/faults", {"operation": "api_keys.list", "status": 503}),) * 2,
    ]

    async def at_once() -> list[httpx.Response]:
        http = factory.http  # the app in this process, or a live server (tox -e pg)
        app = getattr(http, "app", None)
        if app is not None:
            client = httpx.AsyncClient(
                transport=httpx.ASGITransport(app=app), base_url="http://testserver"
            )
        else:
            client = httpx.AsyncClient(base_url=str(http.base_url), timeout=60)
        async with client as c:
            return await asyncio.gather(
                *(
                    c.request(method, path, json=body, headers=headers)
                    for method, path, body in calls
                )
            )

    answers = factory._run(at_once)
    assert [a.status_code for a in answers] == [200] * 3 + [201] * 5, [a.text for a in answers]
    assert kept(admin, factory) == {
        "ip_restriction_created.v0": [[id_, second] for id_ in sorted(subscriptions)]
    }
    restrictions = {a.json()["id"] for a in answers[3:6]}
    fired = events(admin, type="ip_restriction_created.v0")
    assert {item["event"]["object"]["id"] for item in fired} == restrictions
    assert len(fired) == 3 * len(subscriptions)  # each to every subscription, once


def route_rows(factory: Any, account_id: str) -> dict[str, Any]:
    """The account's route rows (`event_route`), by digest."""

    async def read() -> dict[str, Any]:
        async with db.read() as unit:
            rows = await unit.select(EventRoute, f'"account_id" = {unit.mark}', [account_id])
            return {row.digest: row for row in rows}

    return factory._run(read)  # type: ignore[no-any-return]


def test_each_route_is_kept_once_and_a_retired_one_goes_once_no_event_names_it(admin, factory):
    """An event all of whose deliveries were made names its route, whose row holds them once;
    a route the subscriptions no longer give is retired, still read by the events that name
    it, and deleted at a later change of the routes once no event names it and it has been
    retired for `RETIRED_FOR`."""
    account = admin.creds.account_id
    first, second = destination(admin), destination(admin)
    sub = subscribe(admin, ["api_key_created.v0"], [first])
    unused = subscribe(admin, ["api_key_deleted.v0"], [second])  # its events never fire
    one, other = digest_of([(sub, first)]), digest_of([(unused, second)])
    rows = route_rows(factory, account)
    assert set(rows) == {one, other}
    assert rows[one].deliveries == [[sub, first, "delivered", None]]
    assert rows[one].retired_at is None

    admin.post(KEYS, json={})
    patched = admin.patch(f"{SUBSCRIPTIONS}/{sub}", json={"destination_ids": [second]})
    assert patched.status_code == 200, patched.text
    assert admin.delete(f"{SUBSCRIPTIONS}/{unused}").status_code == 204
    admin.post(KEYS, json={})
    rows = route_rows(factory, account)
    now = datetime.now(UTC)
    assert set(rows) == {one, other, digest_of([(sub, second)])}
    assert rows[one].retired_at is not None
    assert rows[other].retired_at is not None
    assert now - timedelta(minutes=5) < rows[one].retired_at <= now
    # The first event reads its deliveries from its route, retired since.
    fired = events(admin, type="api_key_created.v0")
    assert [(i["subscription_id"], i["destination_id"]) for i in fired] == [
        (sub, first),
        (sub, second),
    ]

    # Retired for long enough: the route no event names goes at the next change, the other
    # stays while the first event names it.
    async def retire_earlier() -> None:
        async with db.write() as unit:
            for row in await unit.select(EventRoute, f'"account_id" = {unit.mark}', [account]):
                if row.retired_at is not None:
                    row.retired_at -= RETIRED_FOR

    factory._run(retire_earlier)
    subscribe(admin, ["api_key_updated.v0"], [first])
    rows = route_rows(factory, account)
    assert one in rows
    assert other not in rows
    assert [i["destination_id"] for i in events(admin, type="api_key_created.v0")] == [
        first,
        second,
    ]

    # A route given again is no longer retired.
    patched = admin.patch(f"{SUBSCRIPTIONS}/{sub}", json={"destination_ids": [first]})
    assert patched.status_code == 200, patched.text
    assert route_rows(factory, account)[one].retired_at is None


def test_an_event_a_fault_rule_failed_holds_its_deliveries_the_next_names_its_route(admin, factory):
    account = admin.creds.account_id
    failing, working = destination(admin), destination(admin)
    sub = subscribe(admin, ["api_key_created.v0"], [failing, working])
    rule = {"operation": "event_destinations.deliver", "destination_id": failing, "count": 1}
    assert admin.post("/_admin/faults", json={**rule, "status": 503}).status_code == 201
    admin.post(KEYS, json={})
    admin.post(KEYS, json={})

    async def read() -> list[Any]:
        async with db.read() as unit:
            rows = await unit.select(EventRecord, f'"account_id" = {unit.mark}', [account])
            return sorted(rows, key=lambda row: row.id)

    first, second = factory._run(read)
    assert first.route is None
    assert {item[1]: item[2] for item in first.deliveries} == {
        failing: "failed",
        working: "delivered",
    }
    assert second.deliveries is None
    assert second.route == digest_of(sorted([(sub, failing), (sub, working)]))
    assert second.route in route_rows(factory, account)
