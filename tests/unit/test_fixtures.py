"""Fixture files: every problem is reported as FILE:LINE:COLUMN: <json path>: <message>,
all of them at once, before anything is written."""

from __future__ import annotations

import asyncio
import json
import textwrap
from pathlib import Path

import pytest
from sqlmodel import select

from tests.factories import x509_certificate
from tunnelgw import seeding
from tunnelgw.core.errors import ApiError, Code
from tunnelgw.core.settings import Settings
from tunnelgw.core.spec import load as load_spec
from tunnelgw.migrations import migrate
from tunnelgw.models import Edge, FixtureLoad, Tunnel
from tunnelgw.seeding import FixtureError, loader
from tunnelgw.seeding import kinds as fixture_kinds
from tunnelgw.seeding import plan as fixture_plan
from tunnelgw.seeding import rows as fixture_rows
from tunnelgw.seeding import schema as fixture_schema
from tunnelgw.services import accounts
from tunnelgw.storage.db import Database

EXAMPLE = Path(__file__).resolve().parents[2] / "fixtures" / "example.yaml"


def problems(text: str, file: str = "f.yaml") -> list[str]:
    """The issue lines of a file that must be refused."""
    with pytest.raises(FixtureError) as caught:
        seeding.check(textwrap.dedent(text).encode(), file)
    return [str(issue) for issue in caught.value.issues]


def test_a_valid_file_gives_a_plan_with_labels_kinds_and_ids():
    plan = seeding.check(
        b"""version: 1
tunnels:
  - {ref: t1, metadata: '{"a": 1}'}
edges:
  - {ref: e1, kind: tls, hostports: ["x.test:443"], backend: {backend_id: "@g"}}
tunnel_group_backends:
  - {ref: g}
""",
        "f.yaml",
    )
    assert plan.labels["t1"].kind == "tunnel"
    assert plan.labels["e1"].kind == "tls_edge"
    assert plan.labels["e1"].id.startswith("edgtls_")
    assert plan.resolve({"x": ["@g", "@@literal"]}) == {"x": [plan.labels["g"].id, "@literal"]}


def test_schema_errors_have_exact_positions_in_yaml():
    lines = problems(
        """\
        version: 2
        tunnels:
          - description: ok
            colour: red
        edges:
          - hostports: ["a.test:443"]
          - kind: ftp
        endpoints:
          - {proto: http, hostport: "no-port", type: ephemeral, tunnel_id: "@t"}
        """
    )
    assert lines == [
        "f.yaml:1:10: $.version: 1 was expected",
        "f.yaml:4:5: $.tunnels[0].colour: unknown key 'colour'",
        "f.yaml:6:5: $.edges[0]: 'kind' is required",
        "f.yaml:7:11: $.edges[1].kind: 'ftp' is not one of ['https', 'tcp', 'tls']",
        "f.yaml:9:29: $.endpoints[0].hostport: 'no-port' is not `host:port`",
    ]


def test_schema_errors_have_exact_positions_in_json():
    text = '{\n\t"version": 1,\n\t"tunnels": [\n\t\t{"ref": "t", "bogus": 1},\n\t\t7\n\t]\n}\n'
    lines = problems(text, "f.json")
    assert lines == [
        "f.json:4:16: $.tunnels[0].bogus: unknown key 'bogus'",
        "f.json:5:3: $.tunnels[1]: 7 is not of type 'object'",
    ]


def test_missing_version_points_at_the_document():
    assert problems("tunnels: []\n") == ["f.yaml:1:1: $: 'version' is required"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", "f.yaml:1:1: $: the file is empty"),
        ("version: 1\nversion: 1\n", "f.yaml:2:1: $: duplicate key 'version'"),
        ("version: [1\n", "f.yaml:2:1: $: while parsing a flow sequence"),
        ("? [a]\n: 1\n", "f.yaml:1:3: $: mapping keys must be strings"),
        ("version: !custom 1\n", "f.yaml:1:10: $: could not determine a constructor"),
    ],
)
def test_unparsable_files(text, expected):
    with pytest.raises(FixtureError) as caught:
        seeding.check(text.encode(), "f.yaml")
    assert str(caught.value).startswith(expected)


def test_not_utf8():
    with pytest.raises(FixtureError, match="not UTF-8"):
        seeding.check(b"version: 1\n\xff", "f.yaml")


def test_labels_unknown_duplicate_and_wrong_kind():
    lines = problems(
        """\
        version: 1
        tunnels:
          - {ref: t1, description: "@nowhere"}
          - {ref: t1}
        edges:
          - {ref: tcp1, kind: tcp}
          - {kind: tls, backend: {backend_id: "@t1"}}
        edge_routes:
          - {edge_id: "@tcp1"}
        """
    )
    assert lines == [
        "f.yaml:3:28: $.tunnels[0].description: unknown label 'nowhere'",
        "f.yaml:4:11: $.tunnels[1].ref: label 't1' is already defined at 3:11",
        "f.yaml:7:39: $.edges[1].backend.backend_id: label 't1' is a tunnel; "
        "backend_id needs a tunnel_group_backend",
        "f.yaml:9:15: $.edge_routes[0].edge_id: label 'tcp1' is a tcp_edge; "
        "edge_id needs a https_edge",
    ]


def test_api_labels_only_from_later_items():
    lines = problems(
        """\
        version: 1
        tunnels:
          - {description: "@ca"}
        api:
          ssh_user_certificates:
            - {ssh_certificate_authority_id: "@ca", public_key: "k"}
          ssh_certificate_authorities:
            - {ref: ca}
            - {description: "@ca"}
        endpoints:
          - {type: ephemeral, proto: http, hostport: "a.test:80", tunnel_id: "@nope"}
        """
    )
    assert len(lines) == 3
    assert lines[0].startswith("f.yaml:3:19: $.tunnels[0].description: label 'ca' names an api")
    assert lines[1].startswith(
        "f.yaml:6:38: $.api.ssh_user_certificates[0].ssh_certificate_authority_id: label 'ca'"
    )
    assert lines[2] == "f.yaml:11:70: $.endpoints[0].tunnel_id: unknown label 'nope'"


def test_literal_ids_must_have_the_kind_prefix():
    lines = problems(
        """\
        version: 1
        endpoints:
          - {type: ephemeral, proto: http, hostport: "a.test:80",
             tunnel_id: ra_012345678901234567890123456}
        """
    )
    assert lines == [
        "f.yaml:4:17: $.endpoints[0].tunnel_id: 'ra_012345678901234567890123456' is not "
        "the id of a tunnel (tn_...)"
    ]


def test_certificates_must_be_one_pem_certificate():
    good = x509_certificate(ca=False)
    cases = {
        "none": "hello",
        "two": good + good,
        "key": "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
        "garbage": "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
    }
    items = "".join(
        f"  - {{ref: {name}, certificate_pem: {json.dumps(pem)}}}\n" for name, pem in cases.items()
    )
    text = f"version: 1\ntls_certificates:\n  - {{certificate_pem: {json.dumps(good)}}}\n{items}"
    lines = problems(text)
    assert [line.split(": ", 2)[2] for line in lines] == [
        "must be exactly one PEM CERTIFICATE block (found: no PEM block)",
        "must be exactly one PEM CERTIFICATE block (found: CERTIFICATE, CERTIFICATE)",
        "must be exactly one PEM CERTIFICATE block (found: PRIVATE KEY)",
        "the CERTIFICATE block is not a valid X.509 certificate",
    ]
    assert lines[0].startswith("f.yaml:4:")


def test_event_types_follow_the_spec_catalog_or_the_pattern():
    text = b"version: 1\nevent_subscriptions:\n  - sources: [ip_policy_created.v0, made_up.v0]\n"
    doc = fixture_schema.parse(text, "f.yaml")
    assert fixture_schema.validate(doc) == []
    spec = {"components": {"schemas": {"EventType": {"enum": ["ip_policy_created.v0"]}}}}
    plan = fixture_plan.build(doc, spec)
    assert [str(i) for i in plan.issues] == [
        "f.yaml:3:37: $.event_subscriptions[0].sources[1]: 'made_up.v0' is not an event type "
        "of the API"
    ]
    assert fixture_plan.build(doc, {}).issues == []  # no catalog: the pattern rules
    lines = problems("version: 1\nevent_subscriptions:\n  - sources: [Bad, a.v0, a.v0]\n")
    assert lines[0] == (
        "f.yaml:3:14: $.event_subscriptions[0].sources: ['Bad', 'a.v0', 'a.v0'] has "
        "non-unique elements"
    )
    assert lines[1].endswith("'Bad' is not an event type of the form `<name>.v0`")


def test_endpoint_type_tunnel_and_edge_must_agree():
    lines = problems(
        """\
        version: 1
        tunnels: [{ref: t}]
        edges: [{ref: tcp, kind: tcp}, {ref: web, kind: https}]
        reserved_addrs: [{ref: ra, addr: "a.test:1"}]
        endpoints:
          - {type: ephemeral, proto: http, hostport: "a.test:80"}
          - {type: ephemeral, proto: http, hostport: "a.test:80", tunnel_id: "@t", edge_id: "@web"}
          - {type: edge, proto: http, hostport: "a.test:80", tunnel_id: "@t"}
          - {type: edge, proto: https, hostport: "a.test:443", edge_id: "@tcp"}
          - {type: edge, proto: http, hostport: "a.test:80", edge_id: "@web", tcp_addr_id: "@ra"}
          - {type: edge, proto: tcp, hostport: "a.test:99999", edge_id: "@tcp", domain_id: "@t"}
        """
    )
    messages = [line.split(": ", 2)[1:] for line in lines]
    assert messages == [
        ["$.endpoints[0]", "an endpoint of type ephemeral needs tunnel_id"],
        ["$.endpoints[1].edge_id", "an endpoint of type ephemeral has no edge_id"],
        ["$.endpoints[2]", "an endpoint of type edge needs edge_id"],
        ["$.endpoints[2].tunnel_id", "an endpoint of type edge has no tunnel_id"],
        ["$.endpoints[3].proto", "a tcp_edge serves tcp, not https"],
        ["$.endpoints[4].tcp_addr_id", "only a tcp endpoint has a tcp_addr"],
        ["$.endpoints[5].hostport", "port 99999 is outside 1..65535"],
        ["$.endpoints[5].domain_id", "a tcp endpoint has no domain"],
        ["$.endpoints[5].domain_id", "label 't' is a tunnel; domain_id needs a reserved_domain"],
    ]


def test_other_item_rules():
    lines = problems(
        """\
        version: 1
        edges: [{kind: https, backend: {backend_id: "@g"}},
                {kind: tcp, backend: {backend_id: "@g"}}]
        tunnel_group_backends: [{ref: g}]
        application_users: [{last_login: "2026-13-01T00:00:00Z"}]
        reserved_addrs: [{addr: "a.test:1"}, {addr: "A.test:1"}]
        endpoints: [{type: ephemeral, proto: tcp, tunnel_id: "@t"}]
        tunnels: [{ref: t, started_at: "2026-02-30T00:00:00Z"}]
        """
    )
    assert lines == [
        "f.yaml:2:23: $.edges[0].backend: only tls and tcp edges have a backend module",
        "f.yaml:5:34: $.application_users[0].last_login: '2026-13-01T00:00:00Z' is not a "
        "valid RFC 3339 time",
        "f.yaml:6:45: $.reserved_addrs[1].addr: the address is reserved at 6:25 already",
        "f.yaml:7:13: $.endpoints[0]: an endpoint needs hostport, or tcp_addr_id to take its "
        "address",
        "f.yaml:8:32: $.tunnels[0].started_at: '2026-02-30T00:00:00Z' is not a valid RFC 3339 time",
    ]


def test_api_sections_need_the_create_operation():
    spec = load_spec()
    missing = [
        s for s, (path, _) in fixture_kinds.API_SECTIONS.items() if path not in spec["paths"]
    ]
    doc = fixture_schema.parse(b"version: 1\napi:\n  bogus_section: []\n", "f.yaml")
    assert [str(i) for i in fixture_schema.validate(doc)] == [
        "f.yaml:3:3: $.api.bogus_section: unknown key 'bogus_section'"
    ]
    text = "version: 1\napi:\n" + "".join(f"  {s}: [{{}}]\n" for s in fixture_kinds.API_SECTIONS)
    plan = fixture_plan.build(fixture_schema.parse(text.encode(), "f.yaml"), {"paths": {}})
    assert len(plan.issues) == len(fixture_kinds.API_SECTIONS)
    assert any("this server has no POST /reserved_domains" in str(i) for i in plan.issues)
    if missing:
        assert fixture_plan.build(fixture_schema.parse(text.encode(), "f"), spec).issues


def test_public_url_drops_default_ports():
    def url(proto: str, hostport: str) -> str:
        return fixture_rows.public_url({"proto": proto, "hostport": hostport})

    assert url("http", "a.test:80") == "http://a.test"
    assert url("https", "a.test:443") == "https://a.test"
    assert url("https", "a.test:8443") == "https://a.test:8443"
    assert url("http", "a.test:443") == "http://a.test:443"
    assert url("tcp", "1.tcp.test:20001") == "tcp://1.tcp.test:20001"
    assert fixture_rows.public_url({"public_url": "https://x"}) == "https://x"


def test_the_example_file_is_valid():
    doc = fixture_schema.parse(EXAMPLE.read_bytes(), str(EXAMPLE))
    assert fixture_schema.validate(doc) == []
    plan = fixture_plan.build(doc, {"paths": {p: {"post": {}} for p, _ in _api_paths()}})
    assert plan.issues == []
    sections = {item.section for item in plan.items}
    # Every kind the API cannot create has a direct item, every kind it can an api item.
    read_only = {"tunnels", "endpoint_configurations", "edges", "edge_routes"}
    assert sections >= {*read_only, *fixture_kinds.PHASE3}
    assert {f"api.{s}" for s in fixture_kinds.API_SECTIONS} <= sections
    assert set(fixture_kinds.PHASE1) - read_only <= set(fixture_kinds.API_SECTIONS)


def _api_paths() -> list[tuple[str, str]]:
    return list(fixture_kinds.API_SECTIONS.values())


# A bad file writes nothing, even when the file's problem is found against the database.


@pytest.fixture
def database(tmp_path: Path) -> tuple[Settings, str]:
    settings = Settings(data_dir=tmp_path)
    migrate.upgrade(settings.resolved_database_url())

    async def make() -> str:
        db = Database(settings.resolved_database_url())
        async with db.write() as session:
            creds = await accounts.create_account_with_admin(session)
        await db.dispose()
        return creds.account_id

    return settings, asyncio.run(make())


def _count(settings: Settings, model: type) -> int:
    async def count() -> int:
        db = Database(settings.resolved_database_url())
        async with db.read() as session:
            rows = (await session.exec(select(model))).all()
        await db.dispose()
        return len(rows)

    return asyncio.run(count())


def test_a_bad_file_writes_nothing(database, tmp_path):
    settings, account = database
    path = tmp_path / "bad.yaml"
    path.write_text(
        "version: 1\ntunnels: [{ref: t}]\nedges: [{kind: https}]\n"
        "endpoints:\n  - {type: ephemeral, proto: http, hostport: 'a.test:80',"
        " tunnel_id: tn_012345678901234567890123456}\n"
    )
    with pytest.raises(FixtureError) as caught:
        seeding.load(path, settings, account)
    assert [str(i) for i in caught.value.issues] == [
        f"{path}:5:70: $.endpoints[0].tunnel_id: no tunnel "
        f"'tn_012345678901234567890123456' in account {account}"
    ]
    assert not caught.value.written
    assert (_count(settings, Tunnel), _count(settings, Edge), _count(settings, FixtureLoad)) == (
        0,
        0,
        0,
    )


def test_unknown_account(database, tmp_path):
    settings, _ = database
    path = tmp_path / "ok.yaml"
    path.write_text("version: 1\ntunnels: [{}]\n")
    with pytest.raises(LookupError, match="no account"):
        seeding.load(path, settings, "acct_missing")
    assert _count(settings, Tunnel) == 0


def test_no_account_with_an_admin(tmp_path):
    settings = Settings(data_dir=tmp_path)
    migrate.upgrade(settings.resolved_database_url())
    path = tmp_path / "ok.yaml"
    path.write_text("version: 1\n")
    with pytest.raises(LookupError, match="no account with an admin"):
        seeding.load(path, settings)


def test_api_items_need_an_admin_principal(tmp_path):
    settings = Settings(data_dir=tmp_path)
    migrate.upgrade(settings.resolved_database_url())

    async def make() -> str:
        db = Database(settings.resolved_database_url())
        async with db.write() as session:
            account = await accounts.create_account(session)
            await accounts.create_principal(session, account.id, "bot")
        await db.dispose()
        return account.id

    account = asyncio.run(make())
    path = tmp_path / "f.yaml"
    path.write_text("version: 1\ntunnels: [{}]\napi:\n  http_response_backends: [{body: x}]\n")
    with pytest.raises(LookupError, match="has no admin principal"):
        seeding.load(path, settings, account)


def test_a_concurrent_once_load_of_the_same_file_is_skipped(database, tmp_path, monkeypatch):
    """Two `serve --seed` starts race: the loser's record insert conflicts; it then sees the
    winner's record and skips."""
    settings, account = database
    path = tmp_path / "f.yaml"
    path.write_text("version: 1\ntunnels: [{}]\n")
    seeding.load(path, settings, account, once=True)
    real = loader._phase1
    calls: list[bool] = []

    async def racing(db, plan, account_id, digest, once):  # type: ignore[no-untyped-def]
        if not calls:
            calls.append(True)
            raise ApiError(Code.CONFLICT)
        return await real(db, plan, account_id, digest, once)

    monkeypatch.setattr(loader, "_phase1", racing)
    assert seeding.load(path, settings, account, once=True)["loaded"] is False
    calls.clear()
    with pytest.raises(ApiError):
        seeding.load(path, settings, account)  # without once, the conflict is an error
    assert _count(settings, Tunnel) == 1


def test_cloud_endpoints_and_endpoint_principals(database, tmp_path):
    """Issue 10: a cloud endpoint has neither tunnel nor edge, and an endpoint's
    principal_id must be a user or bot of the account."""
    settings, account = database
    path = tmp_path / "cloud.yaml"
    path.write_text(
        "version: 1\ntunnels: [{ref: t}]\n"
        "endpoints:\n"
        "  - {type: cloud, proto: https, hostport: 'c.test:443', tunnel_id: '@t'}\n"
    )
    with pytest.raises(FixtureError) as caught:
        seeding.load(path, settings, account)
    assert "a cloud endpoint has no tunnel_id" in str(caught.value.issues[0])
    path.write_text(
        "version: 1\nendpoints:\n"
        "  - {type: cloud, proto: https, hostport: 'd.test:443',"
        " principal_id: usr_012345678901234567890123456}\n"
    )
    with pytest.raises(FixtureError) as caught:
        seeding.load(path, settings, account)
    assert "no principal 'usr_012345678901234567890123456'" in str(caught.value.issues[0])
    path.write_text(
        "version: 1\nendpoints:\n"
        "  - {type: cloud, proto: https, hostport: 'c.test:443', name: front, metadata: m,"
        " bindings: [public, internal], pooling_enabled: true}\n"
    )
    summary = seeding.load(path, settings, account)
    assert summary["counts"]["endpoints"] == 1


def test_json_surrogate_pair_escapes_are_one_character_and_lone_ones_an_error():
    """The YAML parser decodes `\\uD83D\\uDE00` escape by escape; the loader joins the pair
    (a JSON document means the emoji) and refuses a lone surrogate, as JSON bodies do."""
    doc = fixture_schema.parse(b'{"version": 1, "k\\ud83d\\ude00": "v\\ud83d\\ude00"}', "f.json")
    assert doc.data == {"version": 1, "k\U0001f600": "v\U0001f600"}
    with pytest.raises(FixtureError, match=r"f.json:1:21: .*lone UTF-16 surrogate"):
        fixture_schema.parse(b'{"version": 1, "k": "v\\ud83d"}', "f.json")


def test_times_are_strict_rfc_3339_and_free_text_is_limited_in_bytes():
    long_text, long_meta, longest = "é" * 128, "€" * 1366, "é" * 127 + "x"
    lines = problems(
        f"""\
        version: 1
        tunnels: [{{started_at: "2026-01-01T00:00:00+99:99"}},
                  {{started_at: "2026-01-01 10:00:00-23:59"}}]
        application_users: [{{last_login: "2026-01-01T00:00:00+10:60"}}]
        tunnel_group_backends: [{{description: "{long_text}", metadata: "{long_meta}"}},
                                {{description: "{longest}"}}]
        """
    )
    assert lines == [
        "f.yaml:2:24: $.tunnels[0].started_at: '2026-01-01T00:00:00+99:99' is not a valid RFC "
        "3339 time",
        "f.yaml:4:34: $.application_users[0].last_login: '2026-01-01T00:00:00+10:60' is not a "
        "valid RFC 3339 time",
        "f.yaml:5:39: $.tunnel_group_backends[0].description: is 256 bytes in UTF-8; the limit "
        "is 255 bytes",
        "f.yaml:5:181: $.tunnel_group_backends[0].metadata: is 4098 bytes in UTF-8; the limit "
        "is 4096 bytes",
    ]
    parsed = fixture_plan.parse_time("2026-01-01 10:00:00-23:59")
    assert parsed is not None
    assert parsed.isoformat() == "2026-01-02T09:59:00+00:00"
