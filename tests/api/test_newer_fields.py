"""Issue 10, item 3: the fields current client libraries send and read where the API document
is silent: reserved domain `resolves_to`, agent ingress certificate management (the reserved
domains' lifecycle, shared), the endpoint fields, and HTTP response backend `headers` (null
when empty: the API document speaks there, and it wins)."""

from __future__ import annotations

import uuid

import pytest

from tests.factories import assert_error
from tunnelgw.core import ids
from tunnelgw.models import AgentIngress, Endpoint, TlsCertificate

RD = "/reserved_domains"
AGIN = "/agent_ingresses"
JOB_MSG = "provisioning a certificate from letsencrypt"


def _domain(prefix: str = "n") -> str:
    return f"{prefix}{uuid.uuid4().hex[:12]}.example.com"


def _row(factory, model, id_):  # type: ignore[no-untyped-def]
    async def fetch(session):  # type: ignore[no-untyped-def]
        return await session.get(model, id_)

    return factory.query(fetch)


# Reserved domains: resolves_to.


@pytest.mark.parametrize("given", [None, [], "absent"])
def test_resolves_to_defaults_to_global(admin, given):
    body = {"domain": _domain()}
    if given != "absent":
        body["resolves_to"] = given
    created = admin.post(RD, json=body)
    assert created.status_code == 201, created.text
    assert created.json()["resolves_to"] is None
    assert admin.get(f"{RD}/{created.json()['id']}").json()["resolves_to"] is None


def test_resolves_to_is_stored_returned_everywhere_and_replaced_by_patch(admin):
    regions = [{"value": "eu"}, {"value": "us"}, {"value": "global"}]
    rd = admin.post(RD, json={"domain": _domain(), "resolves_to": regions}).json()
    url = f"{RD}/{rd['id']}"
    assert rd["resolves_to"] == regions
    assert admin.get(url).json()["resolves_to"] == regions
    listed = {d["id"]: d for d in admin.get(RD).json()["reserved_domains"]}
    assert listed[rd["id"]]["resolves_to"] == regions
    # A PATCH without it keeps it; with it replaces it; null and [] are global.
    assert admin.patch(url, json={"description": "d"}).json()["resolves_to"] == regions
    assert admin.patch(url, json={"resolves_to": [{"value": "jp"}]}).json()["resolves_to"] == [
        {"value": "jp"}
    ]
    assert admin.patch(url, json={"resolves_to": []}).json()["resolves_to"] is None
    admin.patch(url, json={"resolves_to": [{"value": "sa"}]})
    assert admin.patch(url, json={"resolves_to": None}).json()["resolves_to"] is None


def test_every_region_and_global_are_accepted(admin):
    # The platform's point-of-presence codes (its region pinning guide), California included.
    codes = ("global", "au", "eu", "ap", "us", "us-cal-1", "jp", "in", "sa")
    values = [{"value": v} for v in codes]
    rd = admin.post(RD, json={"domain": _domain(), "resolves_to": values})
    assert rd.status_code == 201, rd.text
    assert rd.json()["resolves_to"] == values


@pytest.mark.parametrize(
    ("resolves_to", "code"),
    [
        ([{"value": "mars"}], "ERR_INVALID_FIELD"),
        ([{"value": "banana"}], "ERR_INVALID_FIELD"),  # the platform guide's example
        ([{"value": "192.0.2.1:1234"}], "ERR_INVALID_FIELD"),  # a dedicated IP: none here
        ([{"value": "european-union"}], "ERR_INVALID_FIELD"),  # an announced alias
        ([{"value": "EU"}], "ERR_INVALID_FIELD"),
        ([{"value": ""}], "ERR_INVALID_FIELD"),
        ([{"value": "eu"}, {"value": "eu"}], "ERR_INVALID_FIELD"),
        ([{}], "ERR_MISSING_FIELD"),
        ([{"value": "eu", "weight": 1}], "ERR_UNKNOWN_FIELD"),
        (["eu"], "ERR_WRONG_TYPE"),
        ({"value": "eu"}, "ERR_WRONG_TYPE"),
        ("global", "ERR_WRONG_TYPE"),
        ([{"value": 1}], "ERR_WRONG_TYPE"),
    ],
)
def test_bad_resolves_to_is_400_on_create_and_patch(admin, resolves_to, code):
    domain = _domain()
    body = assert_error(
        admin.post(RD, json={"domain": domain, "resolves_to": resolves_to}), 400, code
    )
    assert body["details"]["field"].startswith("resolves_to")
    assert admin.get(RD, params={"limit": 100}).json()["reserved_domains"] == [] or all(
        d["domain"] != domain for d in admin.get(RD).json()["reserved_domains"]
    )
    rd = admin.post(RD, json={"domain": _domain(), "resolves_to": [{"value": "au"}]}).json()
    patched = admin.patch(f"{RD}/{rd['id']}", json={"resolves_to": resolves_to})
    assert_error(patched, 400, code)
    assert admin.get(f"{RD}/{rd['id']}").json()["resolves_to"] == [{"value": "au"}]


def test_python_client_shape_is_accepted(admin):
    # What the Python client sends on every create and update: `"resolves_to": []`.
    body = {"domain": _domain(), "region": "", "description": "", "metadata": "", "resolves_to": []}
    created = admin.post(RD, json=body)
    assert created.status_code == 201, created.text
    assert admin.patch(f"{RD}/{created.json()['id']}", json={"resolves_to": []}).status_code == 200


def test_reserved_domain_patch_with_a_null_policy_changes_nothing(admin):
    rd = admin.post(RD, json={"domain": _domain(), "certificate_management_policy": {}}).json()
    url = f"{RD}/{rd['id']}"
    settled = admin.get(url).json()
    assert admin.patch(url, json={"certificate_management_policy": None}).json() == settled


# Agent ingresses: certificate management, the reserved domains' lifecycle.


def test_agent_ingress_without_policy_has_null_management(admin):
    ingress = admin.post(AGIN, json={"domain": _domain("i")}).json()
    assert ingress["certificate_management_policy"] is None
    assert ingress["certificate_management_status"] is None
    got = admin.get(f"{AGIN}/{ingress['id']}").json()
    assert got["certificate_management_policy"] is None
    assert got["certificate_management_status"] is None


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        ({}, {"authority": "letsencrypt", "private_key_type": "rsa"}),
        ({"private_key_type": "ecdsa"}, {"authority": "letsencrypt", "private_key_type": "ecdsa"}),
        (
            {"authority": "", "private_key_type": None},
            {"authority": "letsencrypt", "private_key_type": "rsa"},
        ),
    ],
)
def test_agent_ingress_policy_on_create_starts_a_job_then_issues(admin, factory, policy, expected):
    domain = _domain("i")
    created = admin.post(AGIN, json={"domain": domain, "certificate_management_policy": policy})
    assert created.status_code == 201, created.text
    ingress = created.json()
    assert ingress["certificate_management_policy"] == expected
    job = ingress["certificate_management_status"]["provisioning_job"]
    assert job == {
        "error_code": None,
        "msg": JOB_MSG,
        "started_at": job["started_at"],
        "retries_at": None,
    }
    assert ingress["certificate_management_status"]["renews_at"] is None
    # The test server's jobs complete at the next read (issue delay 0).
    got = admin.get(f"{AGIN}/{ingress['id']}").json()
    status = got["certificate_management_status"]
    assert status["provisioning_job"] is None
    assert status["renews_at"] is not None
    row = _row(factory, AgentIngress, ingress["id"])
    cert = _row(factory, TlsCertificate, row.certificate_id)
    assert cert.issued_for_id == ingress["id"]
    assert f"*.{domain}" in cert.description
    # The list settles and shows the same.
    listed = {i["id"]: i for i in admin.get(AGIN).json()["ingresses"]}
    assert listed[ingress["id"]] == got


def test_agent_ingress_policy_by_patch_changes_and_detaches_with_null(admin):
    ingress = admin.post(AGIN, json={"domain": _domain("i")}).json()
    url = f"{AGIN}/{ingress['id']}"
    attached = admin.patch(url, json={"id": ingress["id"], "certificate_management_policy": {}})
    assert attached.status_code == 200, attached.text
    assert attached.json()["certificate_management_policy"]["private_key_type"] == "rsa"
    assert attached.json()["certificate_management_status"]["provisioning_job"]["msg"] == JOB_MSG
    settled = admin.get(url).json()
    # The same policy again changes nothing; a PATCH without it keeps it.
    assert admin.patch(url, json={"certificate_management_policy": {}}).json() == settled
    assert (
        admin.patch(url, json={"description": "x"}).json()["certificate_management_status"]
        == (settled["certificate_management_status"])
    )
    # Another key type restarts the job.
    changed = admin.patch(
        url, json={"certificate_management_policy": {"private_key_type": "ecdsa"}}
    )
    assert changed.json()["certificate_management_status"]["provisioning_job"] is not None
    # Null detaches: policy and status null.
    detached = admin.patch(url, json={"certificate_management_policy": None}).json()
    assert detached["certificate_management_policy"] is None
    assert detached["certificate_management_status"] is None
    assert admin.get(url).json()["certificate_management_status"] is None


def test_agent_ingress_under_invalid_fails_with_dns_error(admin):
    domain = f"i{uuid.uuid4().hex[:12]}.example.invalid"
    ingress = admin.post(AGIN, json={"domain": domain, "certificate_management_policy": {}})
    assert ingress.status_code == 201, ingress.text
    job = admin.get(f"{AGIN}/{ingress.json()['id']}").json()["certificate_management_status"][
        "provisioning_job"
    ]
    assert job["error_code"] == "DNS_ERROR"
    assert job["retries_at"] is not None
    assert ".invalid" in job["msg"]


@pytest.mark.parametrize(
    ("policy", "code", "field"),
    [
        ({"authority": "acme-ca"}, "ERR_INVALID_FIELD", "certificate_management_policy.authority"),
        (
            {"private_key_type": "dsa"},
            "ERR_INVALID_FIELD",
            "certificate_management_policy.private_key_type",
        ),
        ({"colour": "red"}, "ERR_UNKNOWN_FIELD", "certificate_management_policy.colour"),
        ("rsa", "ERR_WRONG_TYPE", "certificate_management_policy"),
    ],
)
def test_agent_ingress_bad_policy_is_400(admin, policy, code, field):
    body = assert_error(
        admin.post(AGIN, json={"domain": _domain("i"), "certificate_management_policy": policy}),
        400,
        code,
    )
    assert body["details"]["field"] == field
    ingress = admin.post(AGIN, json={"domain": _domain("i")}).json()
    patched = admin.patch(f"{AGIN}/{ingress['id']}", json={"certificate_management_policy": policy})
    assert_error(patched, 400, code)


def test_one_lifecycle_implementation_for_both():
    from tunnelgw.models.cert_managed import CertManaged
    from tunnelgw.models.reserved_domain import ReservedDomain

    assert issubclass(AgentIngress, CertManaged)
    assert issubclass(ReservedDomain, CertManaged)


# Endpoints.


def _endpoint(factory, account_id, **fields):  # type: ignore[no-untyped-def]
    values = {
        "proto": "https",
        "hostport": "app.example.com:443",
        "public_url": "https://app.example.com",
        "type": "ephemeral",
        **fields,
    }
    return factory.row(Endpoint, account_id, **values)


@pytest.mark.parametrize(
    ("public_url", "scheme", "host", "port"),
    [
        ("https://app.example.com", "https", "app.example.com", 443),
        ("http://app.example.com", "http", "app.example.com", 80),
        ("http://app.example.com:8080", "http", "app.example.com", 8080),
        ("tcp://1.tcp.example.com:20123", "tcp", "1.tcp.example.com", 20123),
        ("tls://mqtt.example.com", "tls", "mqtt.example.com", 443),
        ("https://odd.example.com:99999", "https", "odd.example.com", 443),  # not a port
    ],
)
def test_endpoint_url_parts_are_derived(admin, factory, public_url, scheme, host, port):
    row = _endpoint(factory, admin.creds.account_id, public_url=public_url)
    got = admin.get(f"/endpoints/{row.id}").json()
    assert (got["url"], got["scheme"], got["host"], got["port"]) == (public_url, scheme, host, port)
    assert got["url"] == got["public_url"]


def test_endpoint_defaults(admin, factory):
    got = admin.get(f"/endpoints/{_endpoint(factory, admin.creds.account_id).id}").json()
    assert got["bindings"] == ["public"]
    assert got["pooling_enabled"] is False
    assert (got["name"], got["description"], got["traffic_policy"]) == ("", "", "")
    assert (got["upstream_url"], got["upstream_protocol"]) == ("", "")
    assert got["principal"] is None
    assert got["tunnel_session"] is None


def test_endpoint_stored_fields_and_refs(admin, factory):
    user_id = admin.creds.principal_id
    bot_id = factory.principal(admin.creds.account_id, "bot").creds.principal_id
    session_id = ids.new_id("ts")
    row = _endpoint(
        factory,
        admin.creds.account_id,
        type="cloud",
        name="front",
        description="door",
        upstream_url="http://localhost:3000",
        upstream_protocol="http1",
        traffic_policy="on_http_request: []",
        bindings=["public", "internal"],
        pooling_enabled=True,
        principal_id=user_id,
        tunnel_session_id=session_id,
    )
    got = admin.get(f"/endpoints/{row.id}").json()
    assert got["type"] == "cloud"
    assert (got["name"], got["description"]) == ("front", "door")
    assert (got["upstream_url"], got["upstream_protocol"]) == ("http://localhost:3000", "http1")
    assert got["traffic_policy"] == "on_http_request: []"
    assert got["bindings"] == ["public", "internal"]
    assert got["pooling_enabled"] is True
    assert got["principal"] == {"id": user_id, "uri": ""}
    assert got["tunnel_session"] == {
        "id": session_id,
        "uri": f"http://testserver/tunnel_sessions/{session_id}",
    }
    by_bot = _endpoint(factory, admin.creds.account_id, principal_id=bot_id)
    assert admin.get(f"/endpoints/{by_bot.id}").json()["principal"]["uri"] == (
        f"http://testserver/service_users/{bot_id}"
    )


# HTTP response backends: headers.


def test_http_response_backend_headers_stay_null_when_empty(admin):
    """The API document says "null when none"; where it speaks it wins over the client's
    model (docs/using-the-api.md: where the API document is silent)."""
    created = admin.post("/backends/http_response", json={"body": "b", "headers": {}}).json()
    assert created["headers"] is None
    assert admin.get(f"/backends/http_response/{created['id']}").json()["headers"] is None
    with_headers = admin.post("/backends/http_response", json={"headers": {"X-A": "1"}}).json()
    assert with_headers["headers"] == {"x-a": "1"}
