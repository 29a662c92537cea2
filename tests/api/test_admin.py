"""Issue 12, item 2: the admin API (`/_admin/`): reset, fixtures, the simulated clock and
fault injection, for admin principals only, served only when enabled."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
import pytest
from starlette.testclient import TestClient

from tests.factories import ApiClient, assert_error, ssh_keygen
from tests.openapi_check import SpecValidator
from tunnelgw.core.spec import load as load_spec

RD = "/reserved_domains"
HRB = "/backends/http_response"
ADMIN_OPERATIONS = [
    ("POST", "/_admin/reset", None),
    ("POST", "/_admin/fixtures", {"version": 1}),
    ("GET", "/_admin/clock", None),
    ("POST", "/_admin/clock", {"advance_seconds": 1}),
    ("GET", "/_admin/faults", None),
    ("POST", "/_admin/faults", {"operation": "api_keys.list", "status": 503}),
    ("DELETE", "/_admin/faults", None),
    ("GET", "/_admin/events", None),
    ("GET", "/_admin/events/count", None),
    ("POST", "/_admin/agent_sessions", {"authtoken": "tgwcr_x"}),
    ("DELETE", "/_admin/agent_sessions/ts_0ERkzK3Nwthdfi0ERkzK3Nwth", None),
]


def _time(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def _request(client: Any, method: str, path: str, body: Any) -> Any:
    return client.request(method, path, **({} if body is None else {"json": body}))


# --- access -------------------------------------------------------------------------------


@pytest.mark.parametrize(("method", "path", "body"), ADMIN_OPERATIONS)
def test_only_admin_principals_may_call_the_admin_api(factory, admin, method, path, body):
    user = factory.principal(admin.creds.account_id, admin=False)
    assert_error(_request(user, method, path, body), 403, "ERR_PERMISSION_DENIED")
    assert admin.get("/_admin/faults").json() == {"faults": []}  # nothing was done
    assert admin.get("/_admin/clock").json()["offset_seconds"] == 0


@pytest.mark.parametrize(("method", "path", "body"), ADMIN_OPERATIONS)
def test_the_admin_api_needs_credentials(admin, method, path, body):
    response = admin.request(method, path, token=None, **({} if body is None else {"json": body}))
    assert_error(response, 401, "ERR_AUTHENTICATION_REQUIRED")


@pytest.fixture(scope="module")
def disabled(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """An in-process app with the admin API off (the default)."""
    from tunnelgw.core.settings import Settings
    from tunnelgw.http.app import create_app
    from tunnelgw.migrations import migrate

    settings = Settings(data_dir=tmp_path_factory.mktemp("no-admin"))
    assert settings.admin_api is False
    migrate.upgrade(settings.resolved_database_url())
    with TestClient(create_app(settings), raise_server_exceptions=False) as client:
        yield client


@pytest.mark.parametrize(("method", "path", "body"), ADMIN_OPERATIONS)
def test_a_disabled_admin_api_is_not_served(disabled, method, path, body):
    client = ApiClient(disabled, SpecValidator(disabled.get("/openapi.json").json()), "tgw_x")
    assert_error(_request(client, method, path, body), 404, "ERR_ROUTE_NOT_FOUND")


def test_the_served_spec_follows_the_setting(disabled, http):
    off = disabled.get("/openapi.json").json()
    assert not [p for p in off["paths"] if p.startswith("/_admin/")]
    assert "admin" not in [t["name"] for t in off["tags"]]
    assert "503" not in off["paths"][RD]["post"]["responses"]
    on = http.get("/openapi.json").json()
    assert {"/_admin/reset", "/_admin/fixtures", "/_admin/clock", "/_admin/faults"} <= set(
        on["paths"]
    )
    # While fault rules can hit an operation, it documents what they answer.
    assert {"429", "500", "503"} <= set(on["paths"][RD]["post"]["responses"])
    assert "429" not in on["paths"]["/_admin/faults"]["post"]["responses"]
    assert "429" not in on["paths"]["/healthz"]["get"]["responses"]


# --- reset --------------------------------------------------------------------------------


def test_reset_empties_the_account_and_keeps_its_credentials(admin, other):
    for client in (admin, other):
        assert client.post(HRB, json={"body": "x"}).status_code == 201
        assert client.post(RD, json={"name": f"r{time.monotonic_ns()}"}).status_code == 201
    admin.post("/_admin/clock", json={"advance_seconds": 600})
    admin.post("/_admin/faults", json={"operation": "api_keys.get", "latency_ms": 1})
    answer = admin.post("/_admin/reset")
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["account_id"] == admin.creds.account_id
    assert body["deleted"]["http_response_backend"] == 1
    assert body["deleted"]["reserved_domain"] == 1
    assert body["deleted"]["fault_rule"] == 1
    assert "api_key" not in body["deleted"]
    assert "principal" not in body["deleted"]
    assert admin.get(HRB).json()["backends"] == []  # the same token still works
    assert admin.get("/_admin/clock").json()["offset_seconds"] == 0
    assert admin.get("/_admin/faults").json() == {"faults": []}
    assert len(other.get(HRB).json()["backends"]) == 1  # another account is untouched


# --- fixtures -----------------------------------------------------------------------------


def test_fixtures_load_into_the_callers_account(admin, other):
    document = {
        "version": 1,
        "tunnels": [{"ref": "t1", "labels": {"env": "ci"}}],
        "api": {"http_response_backends": [{"ref": "b1", "body": "from a fixture"}]},
    }
    answer = admin.post("/_admin/fixtures", json=document)
    assert answer.status_code == 200, answer.text
    summary = answer.json()
    assert summary["account_id"] == admin.creds.account_id
    assert summary["loaded"] is True
    assert summary["file"] == "request body"
    assert summary["counts"] == {"tunnels": 1, "api.http_response_backends": 1}
    backend_id = summary["labels"]["b1"]
    assert admin.get(f"{HRB}/{backend_id}").json()["body"] == "from a fixture"
    assert admin.get(f"/tunnels/{summary['labels']['t1']}").status_code == 200
    assert_error(other.get(f"{HRB}/{backend_id}"), 404, "ERR_NOT_FOUND")


def test_a_bad_fixture_names_each_problem_and_writes_nothing(admin):
    text = b'{\n  "version": 1,\n  "tunnels": [{"ref": "t1"}],\n  "api": {"bogus": []}\n}'
    answer = admin.post(
        "/_admin/fixtures", content=text, headers={"Content-Type": "application/json"}
    )
    body = assert_error(answer, 400, "ERR_INVALID_FIXTURE")
    assert body["msg"].startswith("request body:4:"), body["msg"]  # where it was sent
    assert "bogus" in body["msg"]
    assert body["details"]["problems"] == "1"
    assert body["details"]["written"] == "false"
    assert admin.get("/tunnels").json()["tunnels"] == []


def test_a_refused_api_item_is_named(admin):
    document = {"version": 1, "api": {"reserved_domains": [{"name": "a" * 70}]}}
    body = assert_error(admin.post("/_admin/fixtures", json=document), 400, "ERR_INVALID_FIXTURE")
    assert "POST /reserved_domains answered 400" in body["msg"]
    assert body["details"]["written"] == "true"


def test_fault_rules_leave_the_fixture_loader_alone(admin, served):
    rule = {"operation": "http_response_backends.create", "status": 503}
    assert admin.post("/_admin/faults", json=rule).status_code == 201
    document = {"version": 1, "api": {"http_response_backends": [{"body": "x"}]}}
    assert admin.post("/_admin/fixtures", json=document).status_code == 200
    admin.client.validator = served
    assert_error(admin.post(HRB, json={"body": "y"}), 503, "ERR_SERVICE_UNAVAILABLE")


# --- clock --------------------------------------------------------------------------------


def test_the_clock_moves_forward_and_back_to_real_time(admin, other):
    start = admin.get("/_admin/clock").json()
    assert start["offset_seconds"] == 0
    assert abs(_time(start["now"]) - datetime.now(UTC)) < timedelta(seconds=5)
    moved = admin.post("/_admin/clock", json={"advance_seconds": 86400}).json()
    assert moved["offset_seconds"] == 86400
    assert abs(_time(moved["now"]) - datetime.now(UTC) - timedelta(days=1)) < timedelta(seconds=5)
    # Timestamps the server writes follow the account's clock; another account's do not.
    made = admin.post(HRB, json={"body": "x"}).json()
    assert _time(made["created_at"]) > datetime.now(UTC) + timedelta(hours=23)
    theirs = other.post(HRB, json={"body": "x"}).json()
    assert _time(theirs["created_at"]) < datetime.now(UTC) + timedelta(minutes=1)
    assert other.get("/_admin/clock").json()["offset_seconds"] == 0
    # Set: forward only.
    target = datetime.now(UTC) + timedelta(days=3)
    stamp = target.replace(microsecond=0).isoformat().replace("+00:00", "Z")
    set_to = admin.post("/_admin/clock", json={"set": stamp}).json()
    assert abs(_time(set_to["now"]) - target) < timedelta(seconds=5)
    back = admin.post("/_admin/clock", json={"set": "2020-01-01T00:00:00Z"})
    body = assert_error(back, 400, "ERR_INVALID_FIELD")
    assert body["details"]["field"] == "set"
    assert admin.get("/_admin/clock").json()["offset_seconds"] == set_to["offset_seconds"]
    # Reset: the real time again.
    assert admin.post("/_admin/clock", json={"reset": True}).json()["offset_seconds"] == 0


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, None),
        ({"advance_seconds": 1, "reset": True}, None),
        ({"advance_seconds": -1}, "advance_seconds"),
        ({"reset": False}, "reset"),
        ({"set": "tomorrow"}, "set"),
        ({"set": "2030-01-01T00:00:00"}, "set"),
        ({"set": "9999-01-01T00:00:00Z"}, "set"),
    ],
)
def test_clock_changes_are_validated(admin, body, field):
    response = admin.post("/_admin/clock", json=body)
    assert response.status_code == 400, response.text
    if field is not None:
        assert response.json()["details"]["field"] == field
    assert admin.get("/_admin/clock").json()["offset_seconds"] == 0


def test_the_clock_cannot_run_past_the_year_9000(admin):
    near = admin.post("/_admin/clock", json={"set": "8995-01-01T00:00:00Z"})
    assert near.status_code == 200, near.text
    assert near.json()["now"] == "8995-01-01T00:00:00Z"
    past = admin.post("/_admin/clock", json={"advance_seconds": 315360000})
    body = assert_error(past, 400, "ERR_INVALID_FIELD")
    assert body["details"]["field"] == "advance_seconds"
    assert admin.get("/_admin/clock").json()["offset_seconds"] == near.json()["offset_seconds"]


def test_the_clock_drives_certificate_renewal(admin):
    policy = {"authority": "letsencrypt", "private_key_type": "ecdsa"}
    made = admin.post(
        RD,
        json={
            "domain": f"c{time.monotonic_ns()}.example.com",
            "certificate_management_policy": policy,
        },
    )
    assert made.status_code == 201, made.text
    path = f"{RD}/{made.json()['id']}"
    first = admin.get(path).json()
    assert first["certificate"] is not None
    assert admin.get(path).json()["certificate"] == first["certificate"]  # not due yet
    renews_at = _time(first["certificate_management_status"]["renews_at"])
    admin.post("/_admin/clock", json={"advance_seconds": 61 * 86400})
    renewed = admin.get(path).json()
    assert renewed["certificate"]["id"] != first["certificate"]["id"]
    assert _time(renewed["certificate_management_status"]["renews_at"]) > renews_at


def test_the_clock_sets_ssh_certificate_validity_defaults(admin, tmp_path):
    ca = admin.post("/ssh_certificate_authorities", json={"description": "ca"}).json()
    admin.post("/_admin/clock", json={"advance_seconds": 7 * 86400})
    body = {
        "ssh_certificate_authority_id": ca["id"],
        "public_key": ssh_keygen(tmp_path, "ed25519"),
        "principals": ["ci"],
    }
    cert = admin.post("/ssh_user_certificates", json=body)
    assert cert.status_code == 201, cert.text
    valid_after = _time(cert.json()["valid_after"])
    assert valid_after > datetime.now(UTC) + timedelta(days=6)


# --- faults -------------------------------------------------------------------------------


@pytest.fixture
def served(http) -> SpecValidator:  # type: ignore[no-untyped-def]
    """openapi-core on the spec the server publishes with the admin API on."""
    return SpecValidator(http.get("/openapi.json").json())


def test_an_injected_fault_hits_count_times_then_is_gone(admin, other, served):
    rule = admin.post(
        "/_admin/faults", json={"operation": "reserved_domains.create", "status": 503, "count": 2}
    )
    assert rule.status_code == 201, rule.text
    assert rule.json()["remaining"] == 2
    admin.client.validator = served
    for left in (1, 0):
        hit = admin.post(RD, json={"name": f"f{time.monotonic_ns()}"})
        body = assert_error(hit, 503, "ERR_SERVICE_UNAVAILABLE")
        assert body["details"]["injected"] == "true"
        assert body["details"]["rule"] == rule.json()["id"]
        listed = admin.get("/_admin/faults").json()["faults"]
        assert [r["remaining"] for r in listed] == ([left] if left else [])
    assert admin.get(RD).json()["reserved_domains"] == []  # nothing was done
    assert admin.post(RD, json={"name": f"f{time.monotonic_ns()}"}).status_code == 201
    # Another account never saw the rule.
    assert other.get("/_admin/faults").json() == {"faults": []}


def test_rules_made_after_a_clear_or_a_reset_apply_again(admin, served):
    """Only accounts that have made rules read them (a flag the credential check reads): it is
    cleared with the rules and by reset, and set again by the next rule."""
    admin.client.validator = served
    rule = {"operation": "api_keys.list", "status": 503}
    for undo in ("clear", "reset", "clear"):
        assert admin.post("/_admin/faults", json=rule).status_code == 201
        assert_error(admin.get("/api_keys"), 503, "ERR_SERVICE_UNAVAILABLE")
        if undo == "clear":
            assert admin.delete("/_admin/faults").status_code == 204
        else:
            assert admin.post("/_admin/reset").status_code == 200
        assert admin.get("/api_keys").status_code == 200


@pytest.mark.parametrize(("status", "code"), [(429, "ERR_RATE_LIMITED"), (500, "ERR_INTERNAL")])
def test_each_injectable_status_is_a_catalog_error(admin, served, status, code):
    admin.post("/_admin/faults", json={"operation": "api_keys.list", "status": status})
    admin.client.validator = served
    for _ in range(2):  # no count: until cleared
        body = assert_error(admin.get("/api_keys"), status, code)
        assert body["details"]["injected"] == "true"
    assert admin.delete("/_admin/faults").status_code == 204
    assert admin.get("/api_keys").status_code == 200


def test_a_latency_rule_delays_then_serves(admin):
    admin.post("/_admin/faults", json={"operation": "api_keys.list", "latency_ms": 300, "count": 1})
    started = time.monotonic()
    assert admin.get("/api_keys").status_code == 200
    assert time.monotonic() - started >= 0.3
    assert admin.get("/_admin/faults").json() == {"faults": []}


def test_a_probability_rule_hits_a_share(admin, served):
    admin.post(
        "/_admin/faults", json={"operation": "api_keys.list", "status": 503, "probability": 0.5}
    )
    admin.client.validator = served
    statuses = {admin.get("/api_keys").status_code for _ in range(60)}
    assert statuses == {200, 503}  # 2**-59 odds of a false failure


@pytest.mark.parametrize(
    ("rule", "field"),
    [
        ({"operation": "reserved_domains.create"}, None),  # neither status nor latency
        ({"operation": "admin.reset", "status": 503}, "operation"),
        ({"operation": "health.get", "status": 503}, "operation"),
        ({"operation": "no.such", "status": 503}, "operation"),
        ({"operation": "api_keys.list", "status": 404}, "status"),
        ({"operation": "api_keys.list", "status": 503, "probability": 0}, "probability"),
        ({"operation": "api_keys.list", "status": 503, "count": 0}, "count"),
        ({"operation": "api_keys.list", "latency_ms": 30001}, "latency_ms"),
    ],
)
def test_fault_rules_are_validated(admin, rule, field):
    response = admin.post("/_admin/faults", json=rule)
    assert response.status_code == 400, response.text
    if field is not None:
        assert response.json()["details"]["field"] == field
    assert admin.get("/_admin/faults").json() == {"faults": []}


def test_an_account_has_at_most_100_rules(admin):
    for _ in range(100):
        made = admin.post("/_admin/faults", json={"operation": "api_keys.get", "latency_ms": 0})
        assert made.status_code == 201
    assert_error(
        admin.post("/_admin/faults", json={"operation": "api_keys.get", "latency_ms": 0}),
        409,
        "ERR_QUOTA_EXCEEDED",
    )
    assert len(admin.get("/_admin/faults").json()["faults"]) == 100


def test_the_spec_lists_every_operation_a_rule_can_name() -> None:

    spec = load_spec()
    named = spec["components"]["schemas"]["AdminFaultCreate"]["properties"]["operation"]["enum"]
    secured = [
        op["operationId"]
        for path, item in spec["paths"].items()
        for method, op in item.items()
        if method != "parameters" and op.get("security") != [] and "admin" not in op["tags"]
    ]
    # And the pseudo-operation of event deliveries (tests/api/test_events.py).
    assert named == ["event_destinations.deliver", *secured]
    assert orjson.dumps(named)  # plain strings


def test_escaped_characters_outside_the_bmp_load_as_sent(admin):
    text = (
        b'{"version": 1, "api": {"http_response_backends": '
        b'[{"ref": "b", "body": "\\ud83d\\ude00"}]}}'
    )
    answer = admin.post(
        "/_admin/fixtures", content=text, headers={"Content-Type": "application/json"}
    )
    assert answer.status_code == 200, answer.text
    backend = admin.get(f"{HRB}/{answer.json()['labels']['b']}").json()
    assert backend["body"] == "\U0001f600"
    # An unknown key is named in the message as it was meant.
    bad = b'{"version": 1, "\\ud83d\\ude00x": 1}'
    answer = admin.post(
        "/_admin/fixtures", content=bad, headers={"Content-Type": "application/json"}
    )
    body = assert_error(answer, 400, "ERR_INVALID_FIXTURE")
    assert "\U0001f600x" in body["msg"]
