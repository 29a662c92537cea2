"""Per-account quotas (tunnelgw.services.quotas): every create operation of the API counts the
account's rows of its kind and refuses the one past the quota (409 ERR_QUOTA_EXCEEDED); other
accounts are unaffected; deleting makes room. The quotas here are set on the test app's
settings for one test at a time."""

from __future__ import annotations

import contextlib
import sqlite3
from typing import Any

import pytest
from sqlalchemy.engine import make_url

from tests.conftest import ON_POSTGRESQL
from tests.creates import CREATES
from tests.factories import assert_error
from tunnelgw.core import ids
from tunnelgw.core import settings as settings_module
from tunnelgw.core.errors import ApiError
from tunnelgw.core.spec import load as load_spec
from tunnelgw.models import QUOTA_KINDS, HttpResponseBackend
from tunnelgw.services import quotas
from tunnelgw.storage import db

pytestmark = pytest.mark.inprocess  # sets the serving app's settings

SPEC = load_spec()

# Creates that are not counted, and why: an event subscription has at most one source per
# event type (so its sources are bounded by the subscriptions' quota); the admin API's fault
# rules have their own fixed limit (test_admin.py).
# An account the operator creates (admin.create_account) is no row of an account.
UNCOUNTED = {
    "event_sources.create",
    "admin.create_fault",
    "admin.connect_agent",
    "admin.create_account",
}
# Kinds a simulated agent's connect (admin.connect_agent) counts: test_tunnel_sessions.py.
AGENT_KINDS = {"tunnel_session", "tunnel", "endpoint"}


def _creates_in_spec() -> dict[str, dict[str, Any]]:
    return {
        op["operationId"]: op
        for item in SPEC["paths"].values()
        for method, op in item.items()
        if method == "post" and "201" in op.get("responses", {})
    }


def test_every_create_operation_is_counted_and_documents_the_409():
    """A new create operation fails here until it is counted (CREATES) or exempted with its
    reason (UNCOUNTED), and until its spec documents the 409."""
    creates = _creates_in_spec()
    assert set(creates) == set(CREATES) | UNCOUNTED
    for op_id in CREATES:
        assert "409" in creates[op_id]["responses"], op_id
    assert {create.kind for create in CREATES.values()} | AGENT_KINDS == QUOTA_KINDS


@pytest.fixture
def quota(monkeypatch):
    """Set the serving app's quotas for this test: `quota(kind=n, ...)`, `quota(default=n)`."""

    def set_(default: int | None = None, **kinds: int) -> None:
        current = settings_module.current()
        if default is not None:
            monkeypatch.setattr(current, "quota_default", default)
        monkeypatch.setattr(current, "quotas", ",".join(f"{k}={n}" for k, n in kinds.items()))

    return set_


@pytest.mark.parametrize("op_id", sorted(CREATES))
def test_a_create_past_the_quota_is_refused_and_other_accounts_go_on(
    admin, other, quota, tmp_path, op_id
):
    create = CREATES[op_id]
    path, kind = create.path, create.kind
    # The account's own admin: it is a principal, with a key.
    already = 1 if kind in ("api_key", "principal") else 0
    quota(**{kind: already + 2})
    made = [create.post(admin, tmp_path) for _ in range(2)]
    assert [r.status_code for r in made] == [201, 201], made[-1].text

    refused = create.post(admin, tmp_path)
    body = assert_error(refused, 409, "ERR_QUOTA_EXCEEDED")
    assert body["details"]["kind"] == kind
    assert body["details"]["quota"] == str(already + 2)
    item = f"{path}/{made[0].json()['id']}"
    assert admin.get(item).status_code == 200

    # Another account has a quota of its own.
    assert create.post(other, tmp_path).status_code == 201
    # Deleting one makes room again (a kind that cannot be deleted, abuse reports, stays
    # at its quota: a runaway script meets it).
    if "delete" not in SPEC["paths"][_item_path(path)]:
        assert_error(create.post(admin, tmp_path), 409, "ERR_QUOTA_EXCEEDED")
        return
    assert admin.delete(item).status_code == 204
    assert create.post(admin, tmp_path).status_code == 201


def _item_path(collection: str) -> str:
    """The spec path of one item of `collection`."""
    return next(
        p
        for p in SPEC["paths"]
        if p.startswith(f"{collection}/{{") and p.count("/") == collection.count("/") + 1
    )


def test_the_default_quota_holds_for_kinds_not_named(admin, quota):
    quota(default=1, reserved_addr=3)
    assert admin.post("/backends/http_response", json={}).status_code == 201
    assert_error(admin.post("/backends/http_response", json={}), 409, "ERR_QUOTA_EXCEEDED")
    assert [admin.post("/reserved_addrs", json={}).status_code for _ in range(3)] == [201] * 3
    assert_error(admin.post("/reserved_addrs", json={}), 409, "ERR_QUOTA_EXCEEDED")


def test_a_quota_of_zero_refuses_every_create_and_a_refused_create_writes_nothing(admin, quota):
    quota(event_subscription=0)
    assert_error(
        admin.post("/event_subscriptions", json={"sources": [{"type": "ip_policy_created.v0"}]}),
        409,
        "ERR_QUOTA_EXCEEDED",
    )
    assert admin.get("/event_subscriptions").json()["event_subscriptions"] == []


def test_rows_made_outside_the_create_operations_count(admin, factory, quota):
    """Rows a fixture writes directly are not refused, but they count: the next create past
    the quota is."""
    for _ in range(2):
        factory.row(HttpResponseBackend, admin.creds.account_id, status_code=200)
    quota(http_response_backend=2)
    assert_error(admin.post("/backends/http_response", json={}), 409, "ERR_QUOTA_EXCEEDED")


def _race(admin, factory, creates: int) -> list[str]:  # type: ignore[no-untyped-def]
    """`creates` creates of the admin's account racing in separate units of work (on
    PostgreSQL, separate connections; on SQLite, units of shared transactions): each one's
    outcome."""
    import asyncio

    account = admin.creds.account_id
    settings = settings_module.current()

    async def create() -> str:
        token = settings_module.activate(settings)
        row = HttpResponseBackend.new(
            id=ids.new_id(HttpResponseBackend.PREFIX), account_id=account, status_code=200
        )
        try:
            async with db.write() as unit:
                await quotas.add(unit, row)
            return "created"
        except ApiError as exc:
            return exc.code.error_code
        finally:
            settings_module.deactivate(token)

    async def race() -> list[str]:
        return list(await asyncio.gather(*(create() for _ in range(creates))))

    return list(factory._run(race))


def test_concurrent_creates_do_not_pass_the_quota(admin, factory, quota):
    """Exactly `quota` of the racing creates get in."""
    quota(http_response_backend=3)
    results = _race(admin, factory, 12)
    assert sorted(results) == ["ERR_QUOTA_EXCEEDED"] * 9 + ["created"] * 3
    listed = admin.get("/backends/http_response").json()["backends"]
    assert len(listed) == 3


def test_concurrent_creates_stop_at_a_quota_past_the_bound_raised_ahead(admin, factory, quota):
    """Past what a SQLite writer raises the bound by at once, too: a first race raises it
    ahead; in the second, creates take those slots, raise it again and meet the quota."""
    limit = 2 * quotas.LEASE + 5
    quota(http_response_backend=limit)
    first = _race(admin, factory, 10)
    second = _race(admin, factory, limit)
    assert first == ["created"] * 10
    assert sorted(second) == ["ERR_QUOTA_EXCEEDED"] * 10 + ["created"] * (limit - 10)


def test_fixtures_follow_the_documented_choice(admin, quota):
    """A fixture's `api:` items go through the create operations and their quotas; the rows
    it lists directly are not refused, and count afterwards."""
    quota(tunnel_group_backend=1, http_response_backend=1)
    direct = {"version": 1, "tunnel_group_backends": [{}, {}, {}]}
    assert admin.post("/_admin/fixtures", json=direct).status_code == 200
    assert len(admin.get("/backends/tunnel_group").json()["backends"]) == 3
    assert_error(admin.post("/backends/tunnel_group", json={}), 409, "ERR_QUOTA_EXCEEDED")

    through_api = {"version": 1, "api": {"http_response_backends": [{}, {}]}}
    body = assert_error(
        admin.post("/_admin/fixtures", json=through_api), 400, "ERR_INVALID_FIXTURE"
    )
    assert "409 ERR_QUOTA_EXCEEDED" in body["msg"]
    assert body["details"]["written"] == "true"  # the first item, as with any refused item
    assert len(admin.get("/backends/http_response").json()["backends"]) == 1


def _statements(monkeypatch, method: str, matches) -> list[str]:  # type: ignore[no-untyped-def]
    """The SQL of every statement run through the connections' `method` (fetch, run) that
    `matches`, from now on."""
    from tunnelgw.storage import connections

    seen: list[str] = []
    for cls in (connections.SqliteConnection, connections.PgConnection):
        original = getattr(cls, method)

        async def spy(self, sql, args, original=original):  # type: ignore[no-untyped-def]
            if matches(sql):
                seen.append(sql)
            return await original(self, sql, args)

        monkeypatch.setattr(cls, method, spy)
    return seen


def _count_statements(monkeypatch) -> list[str]:  # type: ignore[no-untyped-def]
    """The SQL of every count the quotas run from now on."""
    return _statements(monkeypatch, "fetch", lambda sql: "count(" in sql.lower())


def test_the_bound_spares_the_count_until_the_quota_is_near(admin, quota, monkeypatch):
    """The first create of a kind counts the account's rows; the next ones read the bound;
    the one the bound would take past the quota counts again, and a delete made room."""
    quota(http_response_backend=3)
    counts = _count_statements(monkeypatch)
    made = [admin.post("/backends/http_response", json={}).json()["id"] for _ in range(3)]
    assert len(counts) == 1  # the first create; the bound then went 1, 2, 3
    assert admin.delete(f"/backends/http_response/{made[0]}").status_code == 204
    assert admin.post("/backends/http_response", json={}).status_code == 201  # counted: 2
    assert len(counts) == 2
    assert_error(admin.post("/backends/http_response", json={}), 409, "ERR_QUOTA_EXCEEDED")
    assert len(counts) == 3


def test_a_fixtures_direct_rows_drop_the_bound(admin, quota):
    """Rows written without the create operations would leave the bound low: the loader
    drops it, so the next create counts them."""
    quota(tunnel_group_backend=3)
    assert admin.post("/backends/tunnel_group", json={}).status_code == 201  # bound 1
    direct = {"version": 1, "tunnel_group_backends": [{}, {}]}
    assert admin.post("/_admin/fixtures", json=direct).status_code == 200
    assert_error(admin.post("/backends/tunnel_group", json={}), 409, "ERR_QUOTA_EXCEEDED")


def _bound_writes(monkeypatch) -> list[str]:  # type: ignore[no-untyped-def]
    """The SQL of every statement that may raise a quota bound, from now on."""
    return _statements(
        monkeypatch, "run", lambda sql: sql.lstrip().upper().startswith("UPDATE QUOTA_USAGE")
    )


sqlite_only = pytest.mark.skipif(ON_POSTGRESQL, reason="SQLite's writer raises bounds ahead")


@sqlite_only
def test_a_lone_writer_raises_the_bound_ahead_and_still_stops_at_the_quota(
    admin, quota, monkeypatch
):
    """A create that finds no slot raises the bound by LEASE; the creates after it write no
    bound. Near the quota the bound goes up by one again, and the create past it is refused."""
    limit = 2 + 2 * quotas.LEASE
    quota(http_response_backend=limit)
    writes = _bound_writes(monkeypatch)
    made = [admin.post("/backends/http_response", json={}).status_code for _ in range(limit)]
    assert made == [201] * limit
    assert_error(admin.post("/backends/http_response", json={}), 409, "ERR_QUOTA_EXCEEDED")
    # The first create's bump and count; two raises by LEASE; the last two creates' tries of
    # a raise, then a bump each: 8 statements for 67 creates, where one each would be 67. A
    # few more when another connection of the test process commits meanwhile (the slots are
    # then given up, and raised again).
    assert 8 <= len(writes) < limit // 4, writes


@sqlite_only
def test_a_commit_by_another_connection_gives_the_slots_up(admin, quota):
    """Another process (the command line, say) adds rows directly and drops the bound, as
    `quotas.forget` does: the slots this server raised before no longer admit anything."""
    quota(http_response_backend=40)
    assert [admin.post("/backends/http_response", json={}).status_code for _ in range(3)] == [
        201
    ] * 3  # the bound is 33 now: 30 slots left
    account = admin.creds.account_id
    with contextlib.closing(sqlite3.connect(make_url(db.current().url).database)) as other:
        other.executemany(
            "INSERT INTO http_response_backend (description, metadata, id, account_id, "
            "created_at, body, status_code) VALUES ('', '', ?, ?, '2026-11-29 00:00:00', '', 200)",
            [(ids.new_id(HttpResponseBackend.PREFIX), account) for _ in range(37)],
        )
        other.execute("DELETE FROM quota_usage WHERE account_id = ?", (account,))
        other.commit()
    assert_error(admin.post("/backends/http_response", json={}), 409, "ERR_QUOTA_EXCEEDED")


@sqlite_only
def test_a_fixtures_direct_rows_drop_the_slots_too(admin, quota):
    """The loader's `forget_all` in this process gives up the slots as it drops the bound."""
    quota(tunnel_group_backend=40)
    assert [admin.post("/backends/tunnel_group", json={}).status_code for _ in range(2)] == [
        201
    ] * 2  # the bound is 33 now: 31 slots left
    direct = {"version": 1, "tunnel_group_backends": [{}] * 38}
    assert admin.post("/_admin/fixtures", json=direct).status_code == 200
    assert_error(admin.post("/backends/tunnel_group", json={}), 409, "ERR_QUOTA_EXCEEDED")
