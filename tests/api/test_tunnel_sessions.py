"""Issue 22: simulated agents (`POST`/`DELETE /_admin/agent_sessions`) start tunnel sessions
with a tunnel credential's authtoken, checked as the platform checks an agent's connect; the
sessions' tunnels and endpoints appear through the read operations; `/tunnel_sessions` lists
them and takes the stop, restart and update commands."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tests.factories import assert_error

AGENTS = "/_admin/agent_sessions"
SESSIONS = "/tunnel_sessions"


def _credential(session: Any, **body: Any) -> dict[str, Any]:
    made = session.post("/credentials", json=body)
    assert made.status_code == 201, made.text
    return made.json()


def _domain(session: Any, domain: str) -> dict[str, Any]:
    made = session.post("/reserved_domains", json={"domain": domain})
    assert made.status_code == 201, made.text
    return made.json()


def _name(label: str) -> str:
    """A domain no other test reserved (reserved domains are unique across accounts)."""
    return f"{label}.{uuid.uuid4().hex[:10]}.example.com"


def _connect(session: Any, token: str, *endpoints: dict[str, Any], **agent: Any) -> Any:
    return session.post(AGENTS, json={"authtoken": token, "endpoints": list(endpoints), **agent})


def _started(session: Any, token: str, *endpoints: dict[str, Any], **agent: Any) -> dict:
    answer = _connect(session, token, *endpoints, **agent)
    assert answer.status_code == 201, answer.text
    return answer.json()


def test_an_agent_starts_a_session_with_tunnels_and_endpoints(admin):
    credential = _credential(admin)
    host = _name("app")
    domain = _domain(admin, host)
    started = _started(
        admin,
        credential["token"],
        {"url": f"https://{host}", "upstream_url": "http://localhost:8080"},
        {"url": "http://demo-{}.tunnelgw.test".format(host.split(".")[1])},
        {"labels": {"env": "prod"}, "upstream_url": "http://localhost:9000"},
        ip="203.0.113.7",
        agent_version="3.19.1",
        os="darwin",
        region="eu",
        metadata='{"host": "web-01"}',
    )
    session = started["tunnel_session"]
    ts = session["id"]
    assert ts.startswith("ts_")
    assert session["credential"] == {
        "id": credential["id"],
        "uri": f"http://testserver/credentials/{credential['id']}",
    }
    assert (session["ip"], session["agent_version"], session["os"], session["region"]) == (
        "203.0.113.7",
        "3.19.1",
        "darwin",
        "eu",
    )
    assert (session["metadata"], session["transport"]) == ('{"host": "web-01"}', "ngrok/v2")
    assert admin.get(f"{SESSIONS}/{ts}").json() == session
    assert admin.get(SESSIONS).json()["tunnel_sessions"] == [session]

    https, http = started["endpoints"]
    assert (https["public_url"], https["hostport"], https["type"]) == (
        f"https://{host}",
        f"{host}:443",
        "ephemeral",
    )
    assert https["domain"]["id"] == domain["id"]
    assert (https["upstream_url"], https["region"]) == ("http://localhost:8080", "eu")
    # The credential's owner, a user: its Ref has `uri` "" (a bot user's answers).
    assert https["principal"] == {"id": credential["owner_id"], "uri": ""}
    # A free name under the shared domain is reserved for the account on the fly.
    shared = "demo-{}.tunnelgw.test".format(host.split(".")[1])
    assert (http["public_url"], http["port"]) == (f"http://{shared}", 80)
    reserved = admin.get(f"/reserved_domains/{http['domain']['id']}").json()
    assert reserved["domain"] == shared
    tunnels = started["tunnels"]
    assert [t["public_url"] for t in tunnels] == [f"https://{host}", f"http://{shared}", ""]
    assert tunnels[2]["labels"] == {"env": "prod"}
    assert tunnels[2]["forwards_to"] == "http://localhost:9000"
    for tunnel in tunnels:
        assert tunnel["tunnel_session"]["id"] == ts
        assert admin.get(f"/tunnels/{tunnel['id']}").json() == tunnel
        assert tunnel["metadata"] == '{"host": "web-01"}'
    for endpoint in started["endpoints"]:
        assert admin.get(f"/endpoints/{endpoint['id']}").json() == endpoint
        assert endpoint["tunnel_session"]["id"] == ts
        assert admin.get(endpoint["tunnel"]["uri"].removeprefix("http://testserver")).is_success
    # Every Ref of the session answers.
    assert admin.get(f"/credentials/{credential['id']}").is_success


def test_labeled_tunnels_join_the_tunnel_group_backends_that_group_them(admin):
    backend = admin.post("/backends/tunnel_group", json={"labels": {"env": "prod"}}).json()
    token = _credential(admin)["token"]
    started = _started(admin, token, {"labels": {"env": "prod", "app": "web"}})
    tunnel = started["tunnels"][0]
    assert [ref["id"] for ref in tunnel["backends"]] == [backend["id"]]
    grouped = admin.get(f"/backends/tunnel_group/{backend['id']}").json()
    assert [ref["id"] for ref in grouped["tunnels"]] == [tunnel["id"]]


def test_a_tcp_endpoint_needs_a_reserved_address_of_the_account(admin, other):
    addr = admin.post("/reserved_addrs", json={"region": "us"}).json()
    token = _credential(admin)["token"]
    started = _started(admin, token, {"url": f"tcp://{addr['addr']}"})
    endpoint = started["endpoints"][0]
    assert (endpoint["proto"], endpoint["tcp_addr"]["id"]) == ("tcp", addr["id"])
    assert endpoint["public_url"] == f"tcp://{addr['addr']}"
    theirs = other.post("/reserved_addrs", json={"region": "us"}).json()
    body = assert_error(
        _connect(admin, token, {"url": f"tcp://{theirs['addr']}"}),
        400,
        "ERR_ENDPOINT_ADDR_NOT_RESERVED",
    )
    assert body["details"]["field"] == "endpoints.0.url"


def test_a_wrong_authtoken_is_refused_and_starts_nothing(admin, other):
    theirs = _credential(other)["token"]
    for token in ("tgwcr_not-a-token", theirs):
        body = assert_error(
            _connect(admin, token, {"url": "https://x.tunnelgw.test"}),
            403,
            "ERR_AGENT_AUTH_FAILED",
        )
        assert token not in body["msg"]
    assert admin.get(SESSIONS).json()["tunnel_sessions"] == []
    assert admin.get("/endpoints").json()["endpoints"] == []
    assert admin.get("/tunnels").json()["tunnels"] == []


@pytest.mark.parametrize(
    ("acl", "asked"),
    [
        (["bind:app.{zone}"], {"url": "https://api.{zone}"}),
        (["bind:*.{zone}"], {"url": "https://{zone}"}),
        (["bind:env=prod"], {"labels": {"env": "dev"}}),
        (["bind:app.{zone}"], {"labels": {"env": "prod"}}),
    ],
)
def test_the_credentials_acl_limits_what_the_agent_binds(admin, acl, asked):
    zone = _name("zone")
    _domain(admin, f"api.{zone}")
    _domain(admin, zone)
    acl = [rule.format(zone=zone) for rule in acl]
    if "url" in asked:
        asked = {"url": asked["url"].format(zone=zone)}
    credential = _credential(admin, acl=acl)
    body = assert_error(_connect(admin, credential["token"], asked), 403, "ERR_AGENT_BIND_DENIED")
    assert body["details"]["credential_id"] == credential["id"]
    assert admin.get(SESSIONS).json()["tunnel_sessions"] == []


def test_an_acl_that_allows_the_hostname_lets_the_agent_bind_it(admin):
    zone = _name("wild")
    wildcard = _domain(admin, f"*.{zone}")
    token = _credential(admin, acl=[f"bind:*.{zone}", "bind:env=*"])["token"]
    started = _started(admin, token, {"url": f"https://a.b.{zone}"}, {"labels": {"env": "x"}})
    assert started["endpoints"][0]["public_url"] == f"https://a.b.{zone}"
    assert started["endpoints"][0]["domain"]["id"] == wildcard["id"]


def test_hostnames_must_be_reserved_by_the_account(admin, other):
    theirs, taken = _name("theirs"), f"taken{uuid.uuid4().hex[:10]}.tunnelgw.test"
    _domain(other, theirs)
    _domain(other, taken)
    token = _credential(admin)["token"]
    for url, status, code in [
        (f"https://{theirs}", 400, "ERR_ENDPOINT_DOMAIN_NOT_RESERVED"),
        (f"tls://{taken}", 409, "ERR_DOMAIN_IN_USE"),
        (f"https://{_name('unreserved')}", 400, "ERR_ENDPOINT_DOMAIN_NOT_RESERVED"),
    ]:
        body = assert_error(_connect(admin, token, {"url": url}), status, code)
        assert body["details"]["field"] == "endpoints.0.url"
    assert admin.get(SESSIONS).json()["tunnel_sessions"] == []


@pytest.mark.parametrize(
    ("url", "code"),
    [
        ("ftp://x.tunnelgw.test", "ERR_ENDPOINT_URL_INVALID"),
        ("https://x.tunnelgw.test/path", "ERR_ENDPOINT_URL_INVALID"),
        ("tcp://x.tunnelgw.test", "ERR_ENDPOINT_PORT_INVALID"),
        ("http://x.tunnelgw.test:8080", "ERR_ENDPOINT_PORT_INVALID"),
    ],
)
def test_an_endpoint_url_that_is_not_one_is_refused(admin, url, code):
    token = _credential(admin)["token"]
    body = assert_error(_connect(admin, token, {"url": url}), 400, code)
    assert body["details"]["field"] == "endpoints.0.url"


def test_an_agents_traffic_policy_is_checked_like_a_cloud_endpoints(admin):
    token = _credential(admin)["token"]
    url = f"https://tp-{uuid.uuid4().hex[:8]}.tunnelgw.test"
    bad = {"url": url, "traffic_policy": "on_http_request: [{actions: [{type: nope}]}]"}
    body = assert_error(_connect(admin, token, bad), 400, "ERR_INVALID_TRAFFIC_POLICY")
    assert body["details"]["field"] == "endpoints.0.traffic_policy"
    secret = (
        "on_http_request:\n  - actions:\n      - type: add-headers\n"
        "        config: {headers: {x-key: \"${secrets.get('nope', 'key')}\"}}\n"
    )
    assert_error(
        _connect(admin, token, {"url": url, "traffic_policy": secret}),
        400,
        "ERR_TRAFFIC_POLICY_SECRET_NOT_FOUND",
    )
    good = {"url": url, "traffic_policy": "on_http_request: [{actions: [{type: deny}]}]"}
    started = _started(admin, token, good)
    assert started["endpoints"][0]["traffic_policy"] == good["traffic_policy"]


def test_an_item_is_a_url_or_labels(admin):
    token = _credential(admin)["token"]
    assert_error(_connect(admin, token, {}), 400, "ERR_MISSING_FIELD")
    both = {"url": "https://x.tunnelgw.test", "labels": {"a": "b"}}
    assert_error(_connect(admin, token, both), 400, "ERR_CONFLICTING_FIELDS")
    assert_error(_connect(admin, token, {"labels": {"a b": "c"}}), 400, "ERR_INVALID_FIELD")
    assert_error(_connect(admin, token, ip="not-an-ip"), 400, "ERR_INVALID_FIELD")


def test_two_endpoints_share_a_url_only_when_both_pool(admin):
    token = _credential(admin)["token"]
    url = {"url": "https://pool.tunnelgw.test"}
    first = _started(admin, token, url)["endpoints"][0]
    body = assert_error(_connect(admin, token, url), 409, "ERR_ENDPOINT_URL_IN_USE")
    assert body["details"]["endpoints"] == first["id"]
    assert body["details"]["field"] == "endpoints.0.url"
    pooled = {**url, "url": "https://pooled.tunnelgw.test", "pooling_enabled": True}
    _started(admin, token, pooled)
    again = _started(admin, token, pooled)["endpoints"][0]
    assert again["pooling_enabled"] is True


def test_an_enforced_agent_ip_restriction_refuses_other_addresses(admin):
    policy = admin.post("/ip_policies", json={}).json()
    admin.post(
        "/ip_policy_rules",
        json={"ip_policy_id": policy["id"], "cidr": "10.0.0.0/8", "action": "allow"},
    )
    restriction = admin.post(
        "/ip_restrictions",
        json={"type": "agent", "enforced": True, "ip_policy_ids": [policy["id"]]},
    ).json()
    token = _credential(admin)["token"]
    body = assert_error(_connect(admin, token, ip="203.0.113.7"), 403, "ERR_IP_RESTRICTED")
    assert body["details"]["restriction"] == restriction["id"]
    assert "agents to connect" in body["msg"]
    assert _started(admin, token, ip="10.1.2.3")["tunnel_session"]["ip"] == "10.1.2.3"
    admin.patch(f"/ip_restrictions/{restriction['id']}", json={"enforced": False})
    assert _started(admin, token, ip="203.0.113.7")["tunnel_session"]["ip"] == "203.0.113.7"


def test_an_inactive_owners_credential_cannot_connect(factory, admin):
    bot = admin.post("/bot_users", json={"name": "ci"}).json()
    token = _credential(admin, owner_id=bot["id"])["token"]
    admin.patch(f"/bot_users/{bot['id']}", json={"active": False})
    body = assert_error(_connect(admin, token), 403, "ERR_PRINCIPAL_INACTIVE")
    assert body["details"]["principal_id"] == bot["id"]
    admin.patch(f"/bot_users/{bot['id']}", json={"active": True})
    assert _started(admin, token)["tunnel_session"]["credential"]["id"]


def _ended(admin: Any, started: dict) -> None:
    ts = started["tunnel_session"]["id"]
    assert_error(admin.get(f"{SESSIONS}/{ts}"), 404, "ERR_NOT_FOUND")
    for tunnel in started["tunnels"]:
        assert_error(admin.get(f"/tunnels/{tunnel['id']}"), 404, "ERR_NOT_FOUND")
    for endpoint in started["endpoints"]:
        assert_error(admin.get(f"/endpoints/{endpoint['id']}"), 404, "ERR_NOT_FOUND")


def test_stop_and_disconnect_remove_the_session_its_tunnels_and_endpoints(admin):
    token = _credential(admin)["token"]
    kept = _started(admin, token, {"url": "https://kept.tunnelgw.test"})
    stopped = _started(admin, token, {"url": "https://a.tunnelgw.test"}, {"labels": {"a": "b"}})
    ts = stopped["tunnel_session"]["id"]
    assert admin.post(f"{SESSIONS}/{ts}/stop", json={}).status_code == 204
    _ended(admin, stopped)
    assert_error(admin.post(f"{SESSIONS}/{ts}/stop", json={}), 404, "ERR_NOT_FOUND")
    gone = _started(admin, token, {"url": "https://b.tunnelgw.test"})
    assert admin.delete(f"{AGENTS}/{gone['tunnel_session']['id']}").status_code == 204
    _ended(admin, gone)
    assert_error(admin.delete(f"{AGENTS}/{ts}"), 404, "ERR_NOT_FOUND")
    # The other session is untouched, and its URL can be taken again once freed.
    assert admin.get(SESSIONS).json()["tunnel_sessions"][0]["id"] == kept["tunnel_session"]["id"]
    _started(admin, token, {"url": "https://a.tunnelgw.test"})


def test_a_command_needs_a_json_body_like_on_the_platform(admin):
    ts = _started(admin, _credential(admin)["token"])["tunnel_session"]["id"]
    for command in ("stop", "restart", "update"):
        assert_error(admin.request("POST", f"{SESSIONS}/{ts}/{command}"), 400, "ERR_INVALID_BODY")
    assert admin.get(f"{SESSIONS}/{ts}").is_success


def test_restart_reconnects_as_a_new_session_with_the_same_tunnels(admin):
    token = _credential(admin)["token"]
    started = _started(admin, token, {"url": "https://r.tunnelgw.test"}, agent_version="3.1.0")
    old = started["tunnel_session"]
    assert admin.post(f"{SESSIONS}/{old['id']}/restart", json={"id": old["id"]}).status_code == 204
    assert_error(admin.get(f"{SESSIONS}/{old['id']}"), 404, "ERR_NOT_FOUND")
    (new,) = admin.get(SESSIONS).json()["tunnel_sessions"]
    assert new["id"] != old["id"]
    assert {k: v for k, v in new.items() if k not in ("id", "uri", "started_at")} == {
        k: v for k, v in old.items() if k not in ("id", "uri", "started_at")
    }
    assert new["started_at"] >= old["started_at"]
    endpoint = admin.get(f"/endpoints/{started['endpoints'][0]['id']}").json()
    tunnel = admin.get(f"/tunnels/{started['tunnels'][0]['id']}").json()
    assert endpoint["tunnel_session"]["id"] == tunnel["tunnel_session"]["id"] == new["id"]


def test_a_body_id_must_be_the_sessions(admin):
    ts = _started(admin, _credential(admin)["token"])["tunnel_session"]["id"]
    body = assert_error(
        admin.post(f"{SESSIONS}/{ts}/stop", json={"id": "ts_other"}), 400, "ERR_INVALID_FIELD"
    )
    assert body["details"]["field"] == "id"
    assert admin.get(f"{SESSIONS}/{ts}").is_success


def test_an_agent_on_windows_cannot_restart_itself(admin):
    ts = _started(admin, _credential(admin)["token"], os="windows")["tunnel_session"]["id"]
    assert_error(admin.post(f"{SESSIONS}/{ts}/restart", json={}), 409, "ERR_AGENT_COMMAND_REFUSED")
    assert admin.get(f"{SESSIONS}/{ts}").is_success


def test_update_fetches_the_newest_version_which_runs_after_a_restart(admin, settings):
    latest = settings.agent_latest_version
    token = _credential(admin)["token"]
    ts = _started(admin, token, agent_version="3.1.0")["tunnel_session"]["id"]
    assert admin.post(f"{SESSIONS}/{ts}/update", json={}).status_code == 204
    assert admin.get(f"{SESSIONS}/{ts}").json()["agent_version"] == "3.1.0"
    again = assert_error(
        admin.post(f"{SESSIONS}/{ts}/update", json={}), 409, "ERR_AGENT_COMMAND_REFUSED"
    )
    assert "restart" in again["msg"]
    admin.post(f"{SESSIONS}/{ts}/restart", json={})
    (restarted,) = admin.get(SESSIONS).json()["tunnel_sessions"]
    assert restarted["agent_version"] == latest
    newest = assert_error(
        admin.post(f"{SESSIONS}/{restarted['id']}/update", json={}),
        409,
        "ERR_AGENT_COMMAND_REFUSED",
    )
    assert "No update is available" in newest["msg"]
    other_major = _started(admin, token, agent_version="2.3.40")["tunnel_session"]["id"]
    assert_error(
        admin.post(f"{SESSIONS}/{other_major}/update", json={}), 409, "ERR_AGENT_COMMAND_REFUSED"
    )


def test_sessions_are_the_accounts_own(admin, other):
    ts = _started(admin, _credential(admin)["token"])["tunnel_session"]["id"]
    assert_error(other.get(f"{SESSIONS}/{ts}"), 404, "ERR_NOT_FOUND")
    for command in ("stop", "restart", "update"):
        assert_error(other.post(f"{SESSIONS}/{ts}/{command}", json={}), 404, "ERR_NOT_FOUND")
    assert_error(other.delete(f"{AGENTS}/{ts}"), 404, "ERR_NOT_FOUND")
    assert other.get(SESSIONS).json()["tunnel_sessions"] == []
    assert admin.get(f"{SESSIONS}/{ts}").is_success


def test_sessions_page_and_filter(admin):
    token = _credential(admin)["token"]
    made = [_started(admin, token, os=os)["tunnel_session"]["id"] for os in ("linux", "darwin")]
    page = admin.get(SESSIONS, params={"limit": 1}).json()
    assert [s["id"] for s in page["tunnel_sessions"]] == [made[1]]
    rest = admin.get(page["next_page_uri"].removeprefix("http://testserver")).json()
    assert [s["id"] for s in rest["tunnel_sessions"]] == [made[0]]
    found = admin.get(SESSIONS, params={"filter": 'obj.os == "linux"'}).json()
    assert [s["id"] for s in found["tunnel_sessions"]] == [made[0]]


def test_reset_ends_every_session(admin):
    _started(admin, _credential(admin)["token"], {"url": "https://z.tunnelgw.test"})
    assert admin.post("/_admin/reset").status_code == 200
    assert admin.get(SESSIONS).json()["tunnel_sessions"] == []
    assert admin.get("/endpoints").json()["endpoints"] == []


@pytest.mark.inprocess  # sets the serving app's settings
def test_a_connect_past_the_quota_starts_nothing(admin, monkeypatch):
    from tunnelgw.core import settings as settings_module

    monkeypatch.setattr(settings_module.current(), "quotas", "tunnel=1")
    token = _credential(admin)["token"]
    _started(admin, token, {"url": "https://q1.tunnelgw.test"})
    two = ({"url": "https://q2.tunnelgw.test"}, {"labels": {"a": "b"}})
    body = assert_error(_connect(admin, token, *two), 409, "ERR_QUOTA_EXCEEDED")
    assert body["details"]["kind"] == "tunnel"
    assert len(admin.get(SESSIONS).json()["tunnel_sessions"]) == 1
    assert len(admin.get("/tunnels").json()["tunnels"]) == 1
