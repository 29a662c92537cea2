"""Cloud endpoints: POST, PATCH, DELETE /endpoints: URL rules per binding, reserved domains
and addresses, pooling, the traffic policy check, and agent endpoints kept read-only."""

from __future__ import annotations

import uuid

import pytest

from tests.factories import assert_error
from tunnelgw.models import Endpoint

PATH = "/endpoints"
SHARED = "tunnelgw.test"
HELLO = """
on_http_request:
  - name: greet
    expressions: ["req.method == 'GET'"]
    actions:
      - type: custom-response
        config: {status_code: 200, body: "Hello ${conn.client_ip}"}
"""
TCP_POLICY = '{"on_tcp_connect": [{"actions": [{"type": "deny"}]}]}'


def _name(prefix: str = "ce") -> str:
    return f"{prefix}{uuid.uuid4().hex[:10]}"


def _create(client, url: str, policy: str = HELLO, **fields):  # type: ignore[no-untyped-def]
    return client.post(PATH, json={"url": url, "type": "cloud", "traffic_policy": policy, **fields})


def test_shared_domain_name_is_reserved_on_the_fly(admin):
    host = f"{_name()}.{SHARED}"
    made = _create(admin, f"HTTPS://{host.upper()}:443", description="greeter", metadata="{}")
    assert made.status_code == 201, made.text
    got = made.json()
    assert got["id"].startswith("ep_")
    assert got["type"] == "cloud"
    assert (got["url"], got["public_url"]) == (f"https://{host}", f"https://{host}")
    assert (got["scheme"], got["proto"], got["host"], got["port"]) == ("https", "https", host, 443)
    assert got["hostport"] == f"{host}:443"
    assert (got["bindings"], got["pooling_enabled"]) == (["public"], False)
    assert (got["description"], got["metadata"], got["traffic_policy"]) == ("greeter", "{}", HELLO)
    assert got["tunnel"] is None
    assert got["edge"] is None
    assert got["tcp_addr"] is None
    # Its creator, a user: no address in this API nor the platform's, so `uri` is "".
    assert got["principal"] == {"id": admin.creds.principal_id, "uri": ""}
    domain = admin.get(f"/reserved_domains/{got['domain']['id']}").json()
    assert domain["domain"] == host
    assert admin.get(f"{PATH}/{got['id']}").json() == got
    listed = admin.get(PATH, params={"filter": f'obj.type == "cloud" && obj.host == "{host}"'})
    assert [item["id"] for item in listed.json()["endpoints"]] == [got["id"]]
    # The name stays reserved for the account: a second endpoint on it reuses it.
    again = _create(admin, f"http://{host}")
    assert again.status_code == 201, again.text
    assert again.json()["domain"] == got["domain"]
    assert again.json()["url"] == f"http://{host}"


def test_another_accounts_shared_name_is_taken(admin, other):
    host = f"{_name()}.{SHARED}"
    assert _create(admin, f"https://{host}").status_code == 201
    assert_error(_create(other, f"https://{host}"), 409, "ERR_DOMAIN_IN_USE")


def test_custom_domains_must_be_reserved_exactly_or_by_wildcard(admin, other):
    base = f"{_name()}.example.com"
    body = assert_error(
        _create(admin, f"https://app.{base}"), 400, "ERR_ENDPOINT_DOMAIN_NOT_RESERVED"
    )
    assert "POST /reserved_domains" in body["msg"]
    assert body["details"]["field"] == "url"
    exact = admin.post("/reserved_domains", json={"domain": f"app.{base}"}).json()
    wild = admin.post("/reserved_domains", json={"domain": f"*.{base}"}).json()
    made = _create(admin, f"https://app.{base}").json()
    assert made["domain"]["id"] == exact["id"]
    for host in (f"api.{base}", f"a.b.{base}", f"*.{base}", f"*.x.{base}"):
        made = _create(admin, f"tls://{host}", TCP_POLICY)
        assert made.status_code == 201, made.text
        assert made.json()["domain"]["id"] == wild["id"]
    # Another account's reservation is not this one's.
    assert_error(_create(other, f"https://app.{base}"), 400, "ERR_ENDPOINT_DOMAIN_NOT_RESERVED")


def test_tcp_endpoints_use_a_reserved_address(admin, other):
    addr = admin.post("/reserved_addrs", json={}).json()
    made = _create(admin, f"tcp://{addr['addr']}", TCP_POLICY)
    assert made.status_code == 201, made.text
    got = made.json()
    assert got["tcp_addr"]["id"] == addr["id"]
    assert got["domain"] is None
    assert (got["url"], got["port"], got["hostport"]) == (
        f"tcp://{addr['addr']}",
        int(addr["addr"].rsplit(":", 1)[1]),
        addr["addr"],
    )
    assert_error(
        _create(other, f"tcp://{addr['addr']}", TCP_POLICY), 400, "ERR_ENDPOINT_ADDR_NOT_RESERVED"
    )
    host = addr["addr"].rsplit(":", 1)[0]
    assert_error(_create(admin, f"tcp://{host}", TCP_POLICY), 400, "ERR_ENDPOINT_PORT_INVALID")


@pytest.mark.parametrize(
    ("url", "bindings", "code"),
    [
        ("ftp://a.example.com", None, "ERR_ENDPOINT_URL_INVALID"),
        ("https://a.example.com/path", None, "ERR_ENDPOINT_URL_INVALID"),
        ("https://user@a.example.com", None, "ERR_ENDPOINT_URL_INVALID"),
        ("https://bad_host.example.com", None, "ERR_ENDPOINT_URL_INVALID"),
        ("https://a.example.com:99999", None, "ERR_ENDPOINT_URL_INVALID"),
        (f"https://a.{SHARED}:8443", None, "ERR_ENDPOINT_PORT_INVALID"),
        (f"http://a.{SHARED}:81", None, "ERR_ENDPOINT_PORT_INVALID"),
        ("https://a.example.com", ["public", "internal"], "ERR_ENDPOINT_BINDING_INVALID"),
        ("https://a.example.com", ["private"], "ERR_ENDPOINT_BINDING_INVALID"),
        ("https://api.example.com", ["internal"], "ERR_ENDPOINT_INTERNAL_HOST_REQUIRED"),
        ("https://a.b.c.d.e.f.internal", ["internal"], "ERR_ENDPOINT_INTERNAL_HOST_REQUIRED"),
        ("https://api.internal", ["public"], "ERR_ENDPOINT_INTERNAL_BINDING_REQUIRED"),
        ("https://svc.ns", ["kubernetes"], "ERR_ENDPOINT_KUBERNETES_URL_INVALID"),
        ("http://svc.ns.cluster", ["kubernetes"], "ERR_ENDPOINT_KUBERNETES_URL_INVALID"),
        ("http://*.ns", ["kubernetes"], "ERR_ENDPOINT_KUBERNETES_URL_INVALID"),
        ("tcp://svc.ns", ["kubernetes"], "ERR_ENDPOINT_PORT_INVALID"),
        ("tcp://db.internal", None, "ERR_ENDPOINT_PORT_INVALID"),
    ],
)
def test_url_rules(admin, url, bindings, code):
    policy = TCP_POLICY if url.startswith("tcp") else HELLO
    body = assert_error(_create(admin, url, policy, bindings=bindings), 400, code)
    assert body["details"]["field"] in ("url", "bindings")


def test_internal_and_kubernetes_endpoints_need_no_reservation(admin, other):
    internal = _create(admin, "https://api.internal").json()  # binding inferred
    assert (internal["bindings"], internal["domain"], internal["port"]) == (["internal"], None, 443)
    tcp = _create(admin, "tcp://ssh.internal:22", TCP_POLICY, bindings=["internal"]).json()
    assert (tcp["url"], tcp["hostport"]) == ("tcp://ssh.internal:22", "ssh.internal:22")
    wildcard = _create(admin, "https://*.apps.internal")
    assert wildcard.status_code == 201, wildcard.text
    k8s = _create(admin, "http://svc.prod:8080", bindings=["kubernetes"]).json()
    assert (k8s["bindings"], k8s["port"], k8s["url"]) == (
        ["kubernetes"],
        8080,
        "http://svc.prod:8080",
    )
    # Internal names are the account's own: another account may use the same URL.
    assert _create(other, "https://api.internal").status_code == 201


def test_pooling_rule(admin):
    url = f"https://{_name()}.internal"
    first = _create(admin, url).json()
    body = assert_error(_create(admin, url, pooling_enabled=True), 409, "ERR_ENDPOINT_URL_IN_USE")
    assert body["details"]["endpoints"] == first["id"]
    # The same URL with another binding is another pool.
    pooled_url = f"https://{_name()}.internal"
    a = _create(admin, pooled_url, pooling_enabled=True).json()
    b = _create(admin, pooled_url, pooling_enabled=True)
    assert b.status_code == 201, b.text
    body = assert_error(_create(admin, pooled_url), 409, "ERR_ENDPOINT_URL_IN_USE")
    assert set(body["details"]["endpoints"].split(", ")) == {a["id"], b.json()["id"]}
    # Turning pooling off while others share the URL is refused too.
    change = admin.patch(f"{PATH}/{a['id']}", json={"pooling_enabled": False})
    assert_error(change, 409, "ERR_ENDPOINT_URL_IN_USE")


def test_update(admin):
    host = f"{_name()}.{SHARED}"
    made = _create(admin, f"https://{host}").json()
    url = f"{PATH}/{made['id']}"
    policy = "on_http_request:\n  - actions:\n      - type: deny\n"
    new_host = f"{_name()}.{SHARED}"
    changed = admin.patch(
        url,
        json={
            "id": made["id"],
            "url": f"https://{new_host}",
            "traffic_policy": policy,
            "metadata": "m",
        },
    )
    assert changed.status_code == 200, changed.text
    got = changed.json()
    assert (got["host"], got["traffic_policy"], got["metadata"]) == (new_host, policy, "m")
    assert got["domain"] != made["domain"]
    assert got["description"] == made["description"]
    assert got["created_at"] == made["created_at"]
    assert admin.get(url).json() == got
    assert_error(
        admin.patch(url, json={"url": f"http://{new_host}"}), 400, "ERR_ENDPOINT_SCHEME_CHANGE"
    )
    assert_error(
        admin.patch(url, json={"traffic_policy": "on_tcp: []"}), 400, "ERR_INVALID_TRAFFIC_POLICY"
    )
    assert admin.patch(url, json={}).json() == {
        **got,
        "updated_at": admin.get(url).json()["updated_at"],
    }


def test_delete_keeps_the_reserved_domain(admin):
    made = _create(admin, f"https://{_name()}.{SHARED}").json()
    assert admin.delete(f"{PATH}/{made['id']}").status_code == 204
    assert_error(admin.get(f"{PATH}/{made['id']}"), 404, "ERR_NOT_FOUND")
    assert admin.get(f"/reserved_domains/{made['domain']['id']}").status_code == 200


def test_agent_endpoints_stay_read_only(admin, factory):
    row = factory.row(
        Endpoint,
        admin.creds.account_id,
        proto="https",
        hostport="agent.example.com:443",
        public_url="https://agent.example.com",
        type="ephemeral",
    )
    url = f"{PATH}/{row.id}"
    body = assert_error(
        admin.patch(url, json={"description": "x"}), 409, "ERR_AGENT_ENDPOINT_READ_ONLY"
    )
    assert "agent" in body["msg"]
    assert_error(admin.delete(url), 409, "ERR_AGENT_ENDPOINT_READ_ONLY")
    assert admin.get(url).json()["description"] == ""


def test_other_accounts_cloud_endpoints_are_404(admin, other):
    made = _create(admin, "https://iso.internal").json()
    url = f"{PATH}/{made['id']}"
    assert_error(other.get(url), 404, "ERR_NOT_FOUND")
    assert_error(other.patch(url, json={"description": "x"}), 404, "ERR_NOT_FOUND")
    assert_error(other.delete(url), 404, "ERR_NOT_FOUND")


@pytest.mark.parametrize(
    ("policy", "details"),
    [
        ("- just a list", {}),
        ("on_request: []", {"phase": "on_request"}),
        ("on_http_request: [{actions: [{type: teleport}]}]", {"rule": "0", "action": "0"}),
        (
            "on_http_request: [{expressions: ['req.method =='], actions: [{type: deny}]}]",
            {"expression": "0"},
        ),
        (
            "on_http_request: [{actions: [{type: deny}]}, {actions: [{type: redirect}]}]",
            {"rule": "1", "action": "0", "type": "redirect", "config": "config"},
        ),
        ("on_http_request: [{actions: [{type: deny, config: {code: 1}}]}]", {"config": "config"}),
        ("on_http_request: [{name: r}]", {"rule": "0"}),
        (
            "on_http_response: [{actions: [{type: url-rewrite, config: {to: /x}}]}]",
            {"type": "url-rewrite"},
        ),
        (
            "on_http_request: [{actions: [{type: custom-response, config: {body: '${req.'}}]}]",
            {"config": "config.body"},
        ),
        ("a: &x [1]\nb: *x", {"line": "2"}),
        ("on_http_request: {", {}),
    ],
)
def test_invalid_policies_point_at_the_fault(admin, policy, details):
    body = assert_error(
        _create(admin, "https://p.internal", policy), 400, "ERR_INVALID_TRAFFIC_POLICY"
    )
    assert body["details"]["field"] == "traffic_policy"
    assert details.items() <= body["details"].items(), body


def test_tcp_endpoints_run_only_on_tcp_connect(admin):
    body = assert_error(_create(admin, "tcp://db.internal:5432"), 400, "ERR_INVALID_TRAFFIC_POLICY")
    assert body["details"]["phase"] == "on_http_request"
    assert "on_tcp_connect" in body["msg"]


def test_missing_and_wrong_fields(admin):
    assert_error(admin.post(PATH, json={"url": "https://a.internal"}), 400, "ERR_MISSING_FIELD")
    assert_error(admin.post(PATH, json={"traffic_policy": HELLO}), 400, "ERR_MISSING_FIELD")
    assert_error(_create(admin, "https://a.internal", type="edge"), 400, "ERR_INVALID_FIELD")
    assert_error(_create(admin, "https://a.internal", policy=""), 400, "ERR_INVALID_FIELD")
    assert_error(_create(admin, "https://a.internal", pooling_enabled="yes"), 400, "ERR_WRONG_TYPE")
    assert_error(_create(admin, "https://a.internal", extra=1), 400, "ERR_UNKNOWN_FIELD")


def test_a_service_user_is_the_principal(admin, factory):
    bot = admin.post("/service_users", json={"name": "deployer"}).json()
    key = admin.post("/api_keys", json={"owner_id": bot["id"]}).json()
    made = _create(factory.client(key["token"]), "https://bot.internal")
    assert made.status_code == 201, made.text
    principal = made.json()["principal"]
    assert principal["id"] == bot["id"]
    assert admin.get(principal["uri"].removeprefix("http://testserver")).status_code == 200


def _secret_policy(vault: str, name: str) -> str:
    return (
        "on_http_request:\n  - actions:\n      - type: add-headers\n"
        f"        config: {{headers: {{x-key: \"${{secrets.get('{vault}', '{name}')}}\"}}}}\n"
        "      - type: deny\n"
    )


def test_policies_read_existing_secrets_and_keep_them(admin, other):
    vault = admin.post("/vaults", json={"name": _name("v")}).json()
    secret = admin.post(
        "/vault_secrets", json={"vault_id": vault["id"], "name": "key", "value": "s3cr3t"}
    ).json()
    policy = _secret_policy(vault["name"], "key")
    made = _create(admin, f"https://{_name()}.internal", policy)
    assert made.status_code == 201, made.text
    missing = _create(admin, f"https://{_name()}.internal", _secret_policy(vault["name"], "nope"))
    body = assert_error(missing, 400, "ERR_TRAFFIC_POLICY_SECRET_NOT_FOUND")
    assert (body["details"]["vault"], body["details"]["secret"]) == (vault["name"], "nope")
    # Another account's vault of that name is not this one's.
    assert_error(
        _create(other, "https://x.internal", policy), 400, "ERR_TRAFFIC_POLICY_SECRET_NOT_FOUND"
    )
    # An update is checked too.
    change = admin.patch(
        f"{PATH}/{made.json()['id']}", json={"traffic_policy": _secret_policy("nov", "key")}
    )
    assert_error(change, 400, "ERR_TRAFFIC_POLICY_SECRET_NOT_FOUND")
    # The secret cannot be deleted while the policy reads it.
    refused = assert_error(admin.delete(f"/vault_secrets/{secret['id']}"), 409, "ERR_SECRET_IN_USE")
    assert refused["details"]["endpoints"] == made.json()["id"]
    assert admin.delete(f"{PATH}/{made.json()['id']}").status_code == 204
    assert admin.delete(f"/vault_secrets/{secret['id']}").status_code == 204
