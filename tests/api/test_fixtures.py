"""Fixture files loaded into an account: rows visible through the API, `@label`
substitution, api items through the create operations, one file in several accounts,
reset, and loading once per file digest."""

from __future__ import annotations

import asyncio
import json
import textwrap
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import col, select

from tests.factories import ssh_keygen, x509_certificate
from tunnelgw import seeding
from tunnelgw.core import ids
from tunnelgw.core.spec import load as load_spec
from tunnelgw.models import (
    ApiKey,
    ApplicationSession,
    ApplicationUser,
    Edge,
    EdgeRoute,
    Endpoint,
    EndpointConfiguration,
    EventSource,
    FixtureLoad,
    ReservedAddr,
    ReservedDomain,
    TlsCertificate,
    Tunnel,
)
from tunnelgw.seeding import FixtureError
from tunnelgw.storage.db import Database

EXAMPLE = Path(__file__).resolve().parents[2] / "fixtures" / "example.yaml"
# The example item whose id fills `{id}` in each list path with one (default: the TLS edge).
ID_LABELS = {
    "/kubernetes_operators/{id}/bound_endpoints": "prod-operator",
    "/vaults/{id}/secrets": "prod-vault",
}


def path_values(path: str, labels: dict[str, str]) -> dict[str, str]:
    """The values of a list path's parameters on the example world."""
    return {"subscription_id": labels["audit"], "id": labels[ID_LABELS.get(path, "mqtt-edge")]}


WORLD = """\
version: 1
tunnels:
  - {{ref: web, description: "@@home", metadata: '{{"host": "laptop"}}'}}
  - {{ref: spare, labels: {{app: mqtt, zone: a}}, started_at: "2026-03-04T05:06:07Z"}}
tunnel_group_backends:
  - {{ref: group, labels: {{app: mqtt}}}}
tls_certificates:
  - {{ref: cert, certificate_pem: {cert}}}
endpoint_configurations:
  - {{type: http}}
reserved_addrs:
  - {{ref: addr, addr: "{addr}", region: eu}}
edges:
  - {{ref: site, kind: https, hostports: ["app.example.test:443"], metadata: edge-meta}}
  - {{ref: mqtt, kind: tls, backend: {{backend_id: "@group"}}}}
  - {{ref: db, kind: tcp, backend: {{backend_id: "@group", enabled: false}}}}
edge_routes:
  - {{ref: root, edge_id: "@site", match: /app, match_type: exact_path,
     backend: {{backend_id: "@group"}}}}
event_subscriptions:
  - {{ref: audit, sources: [ip_policy_created.v0, ip_policy_updated.v0]}}
api:
  http_response_backends:
    - {{ref: down, body: maintenance, status_code: 503, description: "@web"}}
  ssh_certificate_authorities:
    - {{ref: ca, description: fixture ca}}
  ssh_user_certificates:
    - {{ref: alice-cert, ssh_certificate_authority_id: "@ca", public_key: "{ssh_key}"}}
  ssh_host_certificates:
    - {{ref: host-cert, ssh_certificate_authority_id: "@ca", public_key: "{ssh_key}",
       principals: [Host.Example.test]}}
  abuse_reports:
    - {{ref: report, urls: ["https://demo.example.test/phish"]}}
endpoints:
  - {{ref: tunnel-ep, type: ephemeral, proto: https, hostport: "demo.example.test:443",
     tunnel_id: "@web", domain_id: {domain_id}}}
  - {{ref: edge-ep, type: edge, proto: https, hostport: "app.example.test:8443",
     edge_id: "@site", created_at: "2026-01-02T03:04:05+01:00"}}
  - {{ref: tcp-ep, type: ephemeral, proto: tcp, hostport: "1.tcp.example.test:20001",
     tunnel_id: "@spare", tcp_addr_id: "@addr", public_url: "tcp://db.example.test:5432"}}
application_users:
  - {{ref: alice, username: alice, identity_provider: {{name: Google}}}}
application_sessions:
  - {{application_user_id: "@alice", endpoint_id: "@edge-ep", route_id: "@root",
     browser_session: {{ip_address: 192.0.2.1, location: {{country_code: DE}}}}}}
  - {{application_user_id: "@alice", endpoint_id: "@tunnel-ep",
     created_at: "2026-02-01T00:00:00Z"}}
"""


def _write(tmp_path: Path, text: str, name: str = "world.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def _domain(factory, account_id: str) -> ReservedDomain:  # type: ignore[no-untyped-def]
    name = f"d{ids.new_secret(10).lower()}.example.test"
    return factory.row(ReservedDomain, account_id, domain=name)


def _world(factory, session, tmp_path: Path):  # type: ignore[no-untyped-def]
    """The WORLD file for the account of `session` (with a reserved domain made for it)."""
    domain = _domain(factory, session.creds.account_id)
    text = WORLD.format(
        cert=json.dumps(x509_certificate(ca=False)),
        ssh_key=ssh_keygen(tmp_path, "ed25519"),
        domain_id=domain.id,
        addr=f"{ids.new_secret(8).lower()}.tcp.example.test:20001",  # unique across accounts
    )
    path = tmp_path / f"world-{session.creds.account_id}.yaml"
    path.write_text(text)
    return path, domain


@pytest.fixture
def world(factory, admin, tmp_path):  # type: ignore[no-untyped-def]
    return _world(factory, admin, tmp_path)


def _rows(factory, model: Any, account_id: str) -> list[Any]:  # type: ignore[no-untyped-def]
    async def fetch(session):  # type: ignore[no-untyped-def]
        order = model.loaded_at if model is FixtureLoad else model.created_at
        stmt = select(model).where(model.account_id == account_id).order_by(col(order))
        return list((await session.exec(stmt)).all())

    return factory.query(fetch)  # type: ignore[no-any-return]


def _reset(settings, account_id: str) -> dict[str, int]:  # type: ignore[no-untyped-def]
    async def run() -> dict[str, int]:
        database = Database(settings.resolved_database_url())
        try:
            return await seeding.reset(database, account_id)
        finally:
            await database.dispose()

    return asyncio.run(run())


def test_a_file_becomes_rows_and_api_resources(settings, factory, admin, world):
    path, domain = world
    account = admin.creds.account_id
    summary = seeding.load(path, settings, account)
    labels = summary["labels"]
    assert summary["loaded"] is True
    assert summary["account_id"] == account
    assert summary["counts"]["tunnels"] == 2
    assert summary["counts"]["endpoints"] == 3
    assert summary["counts"]["api.ssh_user_certificates"] == 1
    assert labels["mqtt"].startswith("edgtls_")
    assert labels["site"].startswith("edghts_")

    # api items, created through the API, with labels replaced by ids
    backends = admin.get("/backends/http_response").json()["backends"]
    assert [(b["id"], b["status_code"], b["description"]) for b in backends] == [
        (labels["down"], 503, labels["web"])
    ]
    certs = admin.get("/ssh_user_certificates").json()["ssh_user_certificates"]
    assert [c["ssh_certificate_authority_id"] for c in certs] == [labels["ca"]]
    host_cert = admin.get(f"/ssh_host_certificates/{labels['host-cert']}").json()
    assert (host_cert["ssh_certificate_authority_id"], host_cert["principals"]) == (
        labels["ca"],
        ["host.example.test"],
    )
    report = admin.get(f"/abuse_reports/{labels['report']}").json()
    assert report["hostnames"] == [{"hostname": "demo.example.test", "status": "PENDING"}]
    # the temporary key of the load is gone
    assert [k.id for k in _rows(factory, ApiKey, account)] == [admin.creds.api_key_id]

    # direct rows
    tunnels = _rows(factory, Tunnel, account)
    assert [(t.id, t.description, t.labels) for t in tunnels] == [
        (labels["web"], "@home", {}),
        (labels["spare"], "", {"app": "mqtt", "zone": "a"}),
    ]
    web, spare = (admin.get(f"/tunnels/{labels[ref]}").json() for ref in ("web", "spare"))
    # a tunnel takes its endpoint, public URL, proto and region from the first endpoint
    # of the file naming it, unless the file says otherwise
    assert (web["endpoint"]["id"], web["public_url"], web["proto"], web["region"]) == (
        labels["tunnel-ep"],
        "https://demo.example.test",
        "https",
        "us",
    )
    assert (spare["endpoint"]["id"], spare["public_url"], spare["proto"]) == (
        labels["tcp-ep"],
        "tcp://db.example.test:5432",
        "tcp",
    )
    assert spare["started_at"] == "2026-03-04T05:06:07Z"
    assert [b["id"] for b in spare["backends"]] == [labels["group"]]
    assert web["backends"] == []
    group = admin.get(f"/backends/tunnel_group/{labels['group']}").json()
    assert [t["id"] for t in group["tunnels"]] == [labels["spare"]]
    edges = {e.id: e for e in _rows(factory, Edge, account)}
    assert edges[labels["mqtt"]].backend_id == labels["group"]
    assert edges[labels["mqtt"]].backend_enabled is True
    assert (edges[labels["db"]].backend_id, edges[labels["db"]].backend_enabled) == (
        labels["group"],
        False,
    )
    assert edges[labels["site"]].backend_enabled is None
    (route,) = _rows(factory, EdgeRoute, account)
    assert (route.edge_id, route.match_type, route.backend_id) == (
        labels["site"],
        "exact_path",
        labels["group"],
    )
    sources = _rows(factory, EventSource, account)
    assert {(s.subscription_id, s.type) for s in sources} == {
        (labels["audit"], "ip_policy_created.v0"),
        (labels["audit"], "ip_policy_updated.v0"),
    }
    (cert,) = _rows(factory, TlsCertificate, account)
    assert cert.certificate_pem.startswith("-----BEGIN CERTIFICATE-----")
    shown = admin.get(f"/tls_certificates/{cert.id}").json()
    assert (shown["subject_common_name"], shown["private_key_type"]) == ("Test CA", "ecdsa")
    assert (shown["not_before"], shown["issued_at"]) == ("2026-01-01T00:00:00Z", None)
    assert cert.wrapped_private_key is None  # a fixture certificate has no key
    (config,) = _rows(factory, EndpointConfiguration, account)
    assert config.type == "http"
    (addr,) = _rows(factory, ReservedAddr, account)
    assert (addr.id, addr.addr.endswith(".tcp.example.test:20001"), addr.region) == (
        labels["addr"],
        True,
        "eu",
    )

    endpoints = {e.id: e for e in _rows(factory, Endpoint, account)}
    tunnel_ep, edge_ep = endpoints[labels["tunnel-ep"]], endpoints[labels["edge-ep"]]
    assert tunnel_ep.public_url == "https://demo.example.test"
    assert tunnel_ep.meta == '{"host": "laptop"}'
    assert tunnel_ep.reserved_domain_id == domain.id
    assert (tunnel_ep.tunnel_id, tunnel_ep.edge_id) == (labels["web"], None)
    assert edge_ep.public_url == "https://app.example.test:8443"
    assert edge_ep.meta == "edge-meta"
    assert edge_ep.to_api()["created_at"] == "2026-01-02T02:04:05Z"
    tcp_ep = endpoints[labels["tcp-ep"]]
    assert (tcp_ep.reserved_addr_id, tcp_ep.public_url) == (
        labels["addr"],
        "tcp://db.example.test:5432",
    )

    (user,) = _rows(factory, ApplicationUser, account)
    assert user.to_api()["identity_provider"] == {"name": "Google", "url": ""}
    on_edge, on_tunnel = _rows(factory, ApplicationSession, account)[::-1]
    assert (on_edge.edge_id, on_edge.route_id) == (labels["site"], labels["root"])
    assert on_edge.public_url == "https://app.example.test:8443"
    assert on_edge.browser_session["location"]["country_code"] == "DE"
    assert on_edge.browser_session["user_agent"]["raw"] == ""
    assert (on_tunnel.edge_id, on_tunnel.route_id) == (None, None)
    assert on_tunnel.to_api()["created_at"] == "2026-02-01T00:00:00Z"
    assert on_tunnel.expires_at - on_tunnel.last_active >= timedelta(hours=23)

    # the read operations, where this server has them
    if "/endpoints" in load_spec()["paths"]:
        got = admin.get("/endpoints").json()["endpoints"]
        assert {e["id"] for e in got} == set(endpoints)


def test_one_file_in_two_accounts(settings, factory, admin, other, tmp_path):
    path = _write(
        tmp_path,
        """\
        version: 1
        tunnels: [{ref: t}]
        api:
          http_response_backends: [{ref: b, body: hi, description: "@t"}]
        """,
    )
    first = seeding.load(path, settings, admin.creds.account_id)
    second = seeding.load(path, settings, other.creds.account_id)
    assert first["labels"]["t"] != second["labels"]["t"]
    for session, summary in ((admin, first), (other, second)):
        backends = session.get("/backends/http_response").json()["backends"]
        assert [(b["id"], b["description"]) for b in backends] == [
            (summary["labels"]["b"], summary["labels"]["t"])
        ]
        assert len(_rows(factory, Tunnel, session.creds.account_id)) == 1


def test_reset_empties_the_account_and_keeps_its_keys(
    settings, factory, admin, other, world, tmp_path
):
    path, _ = world
    seeding.load(path, settings, admin.creds.account_id)
    seeding.load(_world(factory, other, tmp_path)[0], settings, other.creds.account_id)
    deleted = _reset(settings, admin.creds.account_id)
    assert deleted["tunnel"] == 2
    assert deleted["tunnel_group_member"] == 1
    assert deleted["reserved_addr"] == 1
    assert deleted["event_source"] == 2
    assert deleted["reserved_domain"] == 1
    assert deleted["fixture_load"] == 1
    assert "api_key" not in deleted
    assert "principal" not in deleted
    listed = admin.get("/api_keys")
    assert listed.status_code == 200
    assert [k["id"] for k in listed.json()["keys"]] == [admin.creds.api_key_id]
    assert admin.get("/backends/http_response").json()["backends"] == []
    assert admin.get("/ssh_certificate_authorities").json()["ssh_certificate_authorities"] == []
    for model in (Tunnel, Endpoint, ApplicationSession, EventSource, FixtureLoad):
        assert _rows(factory, model, admin.creds.account_id) == []
    # the other account is untouched
    assert len(_rows(factory, Tunnel, other.creds.account_id)) == 2
    assert len(other.get("/backends/http_response").json()["backends"]) == 1


def test_reset_of_an_unknown_account(settings):
    with pytest.raises(LookupError, match="no account"):
        _reset(settings, "acct_missing")


def test_once_per_account_and_digest(settings, factory, admin, other, tmp_path):
    path = _write(tmp_path, "version: 1\ntunnels: [{}]\n")
    account = admin.creds.account_id
    assert seeding.load(path, settings, account, once=True)["loaded"] is True
    skipped = seeding.load(path, settings, account, once=True)
    assert skipped["loaded"] is False
    assert "counts" not in skipped
    assert len(_rows(factory, Tunnel, account)) == 1
    assert seeding.load(path, settings, other.creds.account_id, once=True)["loaded"] is True
    # without `once` it loads again; a changed file is another digest
    assert seeding.load(path, settings, account)["loaded"] is True
    path.write_text("version: 1\ntunnels: [{}]\n# changed\n")
    assert seeding.load(path, settings, account, once=True)["loaded"] is True
    assert len(_rows(factory, Tunnel, account)) == 3
    assert len(_rows(factory, FixtureLoad, account)) == 2
    # after a reset, the file loads again
    _reset(settings, account)
    assert seeding.load(path, settings, account, once=True)["loaded"] is True


def test_a_refused_api_item_stops_the_load(settings, factory, admin, tmp_path):
    not_a_ca = json.dumps(x509_certificate(ca=False))
    path = _write(
        tmp_path,
        f"""\
        version: 1
        tunnels: [{{ref: t}}]
        api:
          http_response_backends: [{{body: first}}]
          certificate_authorities:
            - {{description: not a ca, ca_pem: {not_a_ca}}}
        endpoints:
          - {{type: ephemeral, proto: http, hostport: "a.test:80", tunnel_id: "@t"}}
        """,
    )
    account = admin.creds.account_id
    with pytest.raises(FixtureError) as caught:
        seeding.load(path, settings, account)
    assert caught.value.written
    (issue,) = caught.value.issues
    assert (issue.line, issue.column) == (6, 39)
    assert issue.message.startswith("POST /certificate_authorities answered 400 ERR_NOT_A_CA: ")
    # what came before stays; what comes after is not written; the key is gone
    assert len(_rows(factory, Tunnel, account)) == 1
    assert len(admin.get("/backends/http_response").json()["backends"]) == 1
    assert _rows(factory, Endpoint, account) == []
    assert [k.id for k in _rows(factory, ApiKey, account)] == [admin.creds.api_key_id]


def test_existing_ids_must_be_of_the_account(settings, factory, admin, other, tmp_path):
    foreign = _domain(factory, other.creds.account_id)
    endpoint = factory.row(
        Endpoint,
        admin.creds.account_id,
        proto="https",
        hostport="x.test:443",
        public_url="https://x.test",
        type="ephemeral",
    )
    path = _write(
        tmp_path,
        f"""\
        version: 1
        tunnels: [{{ref: t}}]
        endpoints:
          - {{type: ephemeral, proto: http, hostport: "a.test:80", tunnel_id: "@t",
             domain_id: {foreign.id}}}
        application_users: [{{ref: u}}]
        application_sessions:
          - {{application_user_id: "@u", endpoint_id: {endpoint.id}}}
        """,
    )
    with pytest.raises(FixtureError) as caught:
        seeding.load(path, settings, admin.creds.account_id)
    assert [(i.line, i.message) for i in caught.value.issues] == [
        (5, f"no reserved_domain {foreign.id!r} in account {admin.creds.account_id}")
    ]
    assert _rows(factory, Tunnel, admin.creds.account_id) == []
    # with the foreign domain gone, the existing endpoint is used as it is
    path.write_text(path.read_text().replace(f"domain_id: {foreign.id}", "region: eu"))
    seeding.load(path, settings, admin.creds.account_id)
    (session,) = _rows(factory, ApplicationSession, admin.creds.account_id)
    assert (session.endpoint_id, session.public_url, session.edge_id) == (
        endpoint.id,
        "https://x.test",
        None,
    )


def test_session_edge_and_route_must_match_the_endpoint(settings, factory, admin, tmp_path):
    path = _write(
        tmp_path,
        """\
        version: 1
        tunnels: [{ref: t}]
        edges: [{ref: a, kind: https}, {ref: b, kind: https}]
        edge_routes: [{ref: rb, edge_id: "@b"}]
        endpoints:
          - {ref: ea, type: edge, proto: https, hostport: "a.test:443", edge_id: "@a"}
          - {ref: et, type: ephemeral, proto: https, hostport: "t.test:443", tunnel_id: "@t"}
        application_users: [{ref: u}]
        application_sessions:
          - {application_user_id: "@u", endpoint_id: "@ea", edge_id: "@b", route_id: "@rb"}
          - {application_user_id: "@u", endpoint_id: "@et", edge_id: "@a"}
          - {application_user_id: "@u", endpoint_id: "@ea", edge_id: "@a"}
        """,
    )
    with pytest.raises(FixtureError) as caught:
        seeding.load(path, settings, admin.creds.account_id)
    got = [(i.line, i.path[-1], i.message) for i in caught.value.issues]
    assert [g[:2] for g in got] == [(10, "edge_id"), (10, "route_id"), (11, "edge_id")]
    assert got[2][2] == "the session's endpoint is served by a tunnel (no edge)"
    assert _rows(factory, Edge, admin.creds.account_id) == []


def test_the_example_gives_every_list_operation_items(settings, admin, tmp_path):
    paths = load_spec()["paths"]
    account = admin.creds.account_id
    summary = seeding.load(EXAMPLE, settings, account)
    try:
        labels = summary["labels"]
        for path, operations in paths.items():
            get = operations.get("get")
            # lists (and the TLS edge backend module); not the unauthenticated service routes
            # nor the admin API's
            if get is None or "security" in get or path.endswith("}") or "admin" in get["tags"]:
                continue
            url = path.format(**path_values(path, labels))
            response = admin.get(url)
            assert response.status_code == 200, (url, response.text)
            body = response.json()
            lists = [v for v in body.values() if isinstance(v, list)]
            assert lists == [] or all(lists), (url, body)
    finally:
        _reset(settings, account)


def test_agent_sessions_connect_with_the_credentials_they_name(settings, admin, tmp_path):
    account = admin.creds.account_id
    literal = admin.post("/credentials", json={"acl": ["bind:lit.tunnelgw.test"]}).json()
    path = _write(
        tmp_path,
        f"""\
        version: 1
        api:
          credentials: [{{ref: cred, acl: ["bind:*.tunnelgw.test"]}}]
        agent_sessions:
          - ref: s1
            credential_id: "@cred"
            os: darwin
            endpoints: [{{url: "https://fx.tunnelgw.test"}}]
          - credential_id: {literal["id"]}
            endpoints: [{{url: "tls://lit.tunnelgw.test"}}]
        """,
    )
    try:
        summary = seeding.load(path, settings, account)
        assert summary["counts"]["agent_sessions"] == 2
        session = admin.get(f"/tunnel_sessions/{summary['labels']['s1']}").json()
        assert (session["os"], session["credential"]["id"]) == ("darwin", summary["labels"]["cred"])
        urls = {e["public_url"] for e in admin.get("/endpoints").json()["endpoints"]}
        assert urls == {"https://fx.tunnelgw.test", "tls://lit.tunnelgw.test"}
    finally:
        _reset(settings, account)


def test_a_refused_agent_session_names_its_position(settings, factory, admin, tmp_path):
    path = _write(
        tmp_path,
        """\
        version: 1
        api:
          credentials: [{ref: cred, acl: ["bind:ok.tunnelgw.test"]}]
        agent_sessions:
          - credential_id: "@cred"
            endpoints: [{url: "https://ok.tunnelgw.test"}, {url: "https://no.tunnelgw.test"}]
        """,
    )
    account = admin.creds.account_id
    try:
        with pytest.raises(FixtureError) as caught:
            seeding.load(path, settings, account)
        assert caught.value.written
        (issue,) = caught.value.issues
        assert issue.path == ("agent_sessions", 0, "endpoints", 1)
        assert "does not allow binding no.tunnelgw.test" in issue.message
        assert _rows(factory, Endpoint, account) == []  # the refused connect wrote nothing
    finally:
        _reset(settings, account)


def test_api_endpoints_are_cloud_endpoints(settings, admin, tmp_path):
    name = f"f{ids.new_secret(10).lower()}"
    path = _write(
        tmp_path,
        f"""\
        version: 1
        api:
          reserved_domains:
            - {{ref: site, name: {name}}}
          endpoints:
            - ref: front
              url: https://{name}.tunnelgw.test
              traffic_policy: "on_http_request: [{{actions: [{{type: deny}}]}}]"
        application_users: [{{ref: bob, username: bob}}]
        application_sessions:
          - {{application_user_id: "@bob", endpoint_id: "@front"}}
        """,
    )
    summary = seeding.load(path, settings, admin.creds.account_id)
    labels = summary["labels"]
    front = admin.get(f"/endpoints/{labels['front']}").json()
    assert (front["type"], front["url"]) == ("cloud", f"https://{name}.tunnelgw.test")
    assert front["domain"]["id"] == labels["site"]
    (session,) = admin.get("/app/sessions").json()["application_sessions"]
    assert session["endpoint"]["id"] == labels["front"]
    assert session["public_url"] == front["url"]
