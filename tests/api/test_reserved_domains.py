"""Reserved domains: /reserved_domains (spec 4.3) and simulated certificate management.
The tests run with certificate_issue_delay_seconds=0, so a job completes at the first read
after it starts; issued certificates are checked with `cryptography` against the issuing CA.
"""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID
from starlette.testclient import TestClient

from tests.factories import assert_error, tls_upload
from tunnelgw.core import settings as tunnelgw_settings
from tunnelgw.crypto import keys
from tunnelgw.http.app import create_app
from tunnelgw.models import EndpointConfiguration, IssuingAuthority, ReservedDomain, TlsCertificate
from tunnelgw.services import certstore
from tunnelgw.storage import db

PATH = "/reserved_domains"
CNAME = re.compile(r"^[0-9a-z]{20}\.cname\.tunnelgw\.test$")
ACME = re.compile(r"^[0-9a-z]{20}\.acme\.tunnelgw\.test$")
JOB_MSG = "provisioning a certificate from letsencrypt"


def label(prefix: str = "d") -> str:
    """A fresh DNS label: domains are reserved once across every account of the test run."""
    return f"{prefix}{uuid.uuid4().hex[:12]}"


def custom(prefix: str = "d") -> str:
    return f"{label(prefix)}.example.com"


def _at(text: str) -> datetime:
    return datetime.fromisoformat(text)


def _row(factory, model, id_):  # type: ignore[no-untyped-def]
    async def fetch(session):  # type: ignore[no-untyped-def]
        return await session.get(model, id_)

    return factory.query(fetch)


def _cert(factory, account_id: str):  # type: ignore[no-untyped-def]
    """An uploaded TLS certificate of the account (through the API of a principal of it)."""
    upload = tls_upload(dns_names=("uploaded.example.com",))
    body = {"certificate_pem": upload.chain_pem, "private_key_pem": upload.key_pem}
    made = factory.principal(account_id, admin=True).post("/tls_certificates", json=body)
    assert made.status_code == 201, made.text
    return _row(factory, TlsCertificate, made.json()["id"])


def test_create_get_list_update_delete(admin):
    domain = custom()
    created = admin.post(
        PATH, json={"domain": domain, "description": "shop", "metadata": '{"a": 1}'}
    )
    assert created.status_code == 201, created.text
    rd = created.json()
    assert rd["id"].startswith("rd_")
    assert rd["uri"] == f"http://testserver{PATH}/{rd['id']}"
    assert rd["domain"] == domain
    assert (rd["description"], rd["metadata"], rd["region"]) == ("shop", '{"a": 1}', "us")
    assert CNAME.match(rd["cname_target"])
    assert rd["acme_challenge_cname_target"] is None
    for field in (
        "http_endpoint_configuration",
        "https_endpoint_configuration",
        "certificate",
        "certificate_management_policy",
        "certificate_management_status",
    ):
        assert rd[field] is None, field

    url = f"{PATH}/{rd['id']}"
    assert admin.get(url).json() == rd
    assert rd in admin.get(PATH).json()["reserved_domains"]
    updated = admin.patch(url, json={"description": "renamed", "metadata": ""}).json()
    assert updated == {**rd, "description": "renamed", "metadata": ""}
    assert admin.patch(url, json={}).json() == updated
    assert admin.patch(url).json() == updated  # no body at all
    assert admin.delete(url).status_code == 204
    assert_error(admin.get(url), 404, "ERR_NOT_FOUND")
    assert_error(admin.delete(url), 404, "ERR_NOT_FOUND")


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        (lambda n: {"name": n}, lambda n: f"{n}.tunnelgw.test"),
        (lambda n: {"domain": n.upper()}, lambda n: f"{n}.tunnelgw.test"),
        (lambda n: {"name": f"{n}.Example.COM"}, lambda n: f"{n}.example.com"),
        (lambda n: {"name": f"{n}.example.com", "domain": f"{n.upper()}.example.com"},
         lambda n: f"{n}.example.com"),
        (lambda n: {"name": n, "domain": f"{n}.tunnelgw.test"}, lambda n: f"{n}.tunnelgw.test"),
        (lambda n: {"name": "", "domain": f"{n}.example.com"}, lambda n: f"{n}.example.com"),
        (lambda n: {"name": f"{n}.example.com", "domain": None}, lambda n: f"{n}.example.com"),
        (lambda n: {"domain": f"a.{n}.tunnelgw.test"}, lambda n: f"a.{n}.tunnelgw.test"),
    ],
    ids=["name", "domain", "full-name", "both-same", "both-expanded", "empty-name",
         "null-domain", "deep-service"],
)  # fmt: skip
def test_name_and_domain_forms(admin, fields, expected):
    name = label()
    created = admin.post(PATH, json=fields(name))
    assert created.status_code == 201, created.text
    assert created.json()["domain"] == expected(name)


def test_service_subdomains_have_no_targets(admin):
    for domain in (f"{label()}.tunnelgw.test", f"*.{label()}.tunnelgw.test", label()):
        rd = admin.post(PATH, json={"domain": domain}).json()
        assert (rd["cname_target"], rd["acme_challenge_cname_target"]) == (None, None), rd


def test_custom_wildcard_gets_an_acme_challenge_target(admin):
    wildcard = admin.post(PATH, json={"domain": f"*.{custom()}"}).json()
    assert CNAME.match(wildcard["cname_target"])
    assert ACME.match(wildcard["acme_challenge_cname_target"])
    plain = admin.post(PATH, json={"domain": custom()}).json()
    assert plain["acme_challenge_cname_target"] is None
    assert plain["cname_target"] != wildcard["cname_target"]


@pytest.mark.parametrize(
    ("body", "code", "field"),
    [
        ({}, "ERR_MISSING_FIELD", "domain"),
        ({"name": "", "domain": ""}, "ERR_MISSING_FIELD", "domain"),
        ({"name": None, "domain": None, "region": "eu"}, "ERR_MISSING_FIELD", "domain"),
        ({"name": "a.example.com", "domain": "b.example.com"}, "ERR_CONFLICTING_FIELDS", "name"),
        ({"name": "a", "domain": "a.example.com"}, "ERR_CONFLICTING_FIELDS", "name"),
        ({"domain": "tunnelgw.test"}, "ERR_INVALID_DOMAIN", "domain"),
        ({"name": "TunnelGW.test"}, "ERR_INVALID_DOMAIN", "name"),
        ({"domain": "-bad.example.com"}, "ERR_INVALID_FIELD", "domain"),
        ({"domain": "a..example.com"}, "ERR_INVALID_FIELD", "domain"),
        ({"domain": "*.com"}, "ERR_INVALID_FIELD", "domain"),
        ({"domain": "a.*.example.com"}, "ERR_INVALID_FIELD", "domain"),
        ({"domain": "example.123"}, "ERR_INVALID_FIELD", "domain"),
        ({"domain": "example.com."}, "ERR_INVALID_FIELD", "domain"),
        ({"name": "a b"}, "ERR_INVALID_FIELD", "name"),
        ({"domain": ("a" * 60 + ".") * 5 + "com"}, "ERR_INVALID_FIELD", "domain"),
        ({"domain": "x.example.com", "region": "mars"}, "ERR_INVALID_FIELD", "region"),
        ({"domain": "x.example.com", "metadata": "x" * 4097}, "ERR_FIELD_TOO_LONG", "metadata"),
        ({"domain": "x.example.com", "cname_target": "x"}, "ERR_UNKNOWN_FIELD", "cname_target"),
        ({"domain": 5}, "ERR_WRONG_TYPE", "domain"),
        (
            {"domain": "x.example.com", "certificate_id": "cert_nope"},
            "ERR_INVALID_FIELD",
            "certificate_id",
        ),
        (
            {"domain": "x.example.com", "certificate_management_policy": {"authority": "zerossl"}},
            "ERR_INVALID_FIELD",
            "certificate_management_policy.authority",
        ),
        (
            {"domain": "x.example.com", "certificate_management_policy": {"x": 1}},
            "ERR_UNKNOWN_FIELD",
            "certificate_management_policy.x",
        ),
        (
            {
                "domain": "x.example.com",
                "certificate_id": "cert_" + "0" * 27,
                "certificate_management_policy": {},
            },
            "ERR_CONFLICTING_FIELDS",
            "certificate_management_policy",
        ),
    ],
)
def test_invalid_creates(admin, factory, body, code, field):
    error = assert_error(admin.post(PATH, json=body), 400, code)
    assert error["details"]["field"] == field
    assert admin.get(PATH).json()["reserved_domains"] == []


def test_description_is_limited_to_255_bytes_like_every_resources(admin):
    # The API document gives no limit here; the platform limits every description to 255
    # bytes (tests/api/test_limits.py goes over every resource).
    refused = admin.post(PATH, json={"domain": custom(), "description": "é" * 2000})
    assert assert_error(refused, 400, "ERR_FIELD_TOO_LONG")["details"]["field"] == "description"
    rd = admin.post(PATH, json={"domain": custom(), "description": "é" * 127})
    assert rd.status_code == 201, rd.text


@pytest.mark.parametrize("region", ["au", "eu", "ap", "us", "jp", "in", "sa"])
def test_regions(admin, region):
    assert admin.post(PATH, json={"domain": custom(), "region": region}).json()["region"] == region


@pytest.mark.parametrize("unset", [{}, {"region": ""}, {"region": None}])
def test_region_defaults_to_us(admin, unset):
    assert admin.post(PATH, json={"domain": custom(), **unset}).json()["region"] == "us"


def test_a_domain_is_reserved_once_across_accounts(admin, other):
    domain = custom()
    first = admin.post(PATH, json={"domain": domain}).json()
    for account, body in (
        (other, {"domain": domain.upper()}),
        (admin, {"name": domain}),
        (other, {"name": domain, "domain": domain}),
    ):
        error = assert_error(account.post(PATH, json=body), 409, "ERR_DOMAIN_IN_USE")
        assert error["details"]["field"] == "domain"
    service = label()
    admin.post(PATH, json={"name": service})
    assert_error(other.post(PATH, json={"domain": f"{service}.tunnelgw.test"}), 409,
                 "ERR_DOMAIN_IN_USE")  # fmt: skip
    # A wildcard is its own reservation, not a claim on the names under it.
    assert other.post(PATH, json={"domain": f"*.{domain}"}).status_code == 201
    assert admin.delete(f"{PATH}/{first['id']}").status_code == 204
    assert other.post(PATH, json={"domain": domain}).status_code == 201


def test_certificate_id_on_create(admin, other, factory):
    mine = _cert(factory, admin.creds.account_id)
    theirs = _cert(factory, other.creds.account_id)
    rd = admin.post(PATH, json={"domain": custom(), "certificate_id": mine.id}).json()
    assert rd["certificate"] == {
        "id": mine.id,
        "uri": f"http://testserver/tls_certificates/{mine.id}",
    }
    assert rd["certificate_management_policy"] is None
    for cert_id in (theirs.id, "cert_" + "0" * 27):
        error = assert_error(
            admin.post(PATH, json={"domain": custom(), "certificate_id": cert_id}),
            404,
            "ERR_REFERENCE_NOT_FOUND",
        )
        assert error["details"]["field"] == "certificate_id"
    # Null on one side is no conflict.
    both = {"domain": custom(), "certificate_id": mine.id, "certificate_management_policy": None}
    assert admin.post(PATH, json=both).status_code == 201
    nulls = {"domain": custom(), "certificate_id": None, "certificate_management_policy": {}}
    assert admin.post(PATH, json=nulls).json()["certificate_management_policy"] is not None


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        ({}, {"authority": "letsencrypt", "private_key_type": "rsa"}),
        ({"authority": "", "private_key_type": ""}, {"authority": "letsencrypt",
                                                     "private_key_type": "rsa"}),
        ({"authority": None, "private_key_type": None}, {"authority": "letsencrypt",
                                                         "private_key_type": "rsa"}),
        ({"private_key_type": "ecdsa"}, {"authority": "letsencrypt", "private_key_type": "ecdsa"}),
        ({"authority": "letsencrypt", "private_key_type": "rsa"}, {"authority": "letsencrypt",
                                                                   "private_key_type": "rsa"}),
    ],
)  # fmt: skip
def test_create_with_a_policy_starts_a_job(admin, policy, expected):
    before = datetime.now(UTC).replace(microsecond=0)
    rd = admin.post(PATH, json={"domain": custom(), "certificate_management_policy": policy}).json()
    assert rd["certificate_management_policy"] == expected
    assert rd["certificate"] is None
    status = rd["certificate_management_status"]
    assert status["renews_at"] is None
    job = status["provisioning_job"]
    assert (job["error_code"], job["msg"], job["retries_at"]) == (None, JOB_MSG, None)
    assert before <= _at(job["started_at"]) <= datetime.now(UTC)


def _issuing_ca(factory) -> x509.Certificate:  # type: ignore[no-untyped-def]
    row = _row(factory, IssuingAuthority, "letsencrypt")
    return x509.load_pem_x509_certificate(row.certificate_pem.encode())


@pytest.mark.parametrize(
    ("key_type", "key_class"),
    [("rsa", rsa.RSAPublicKey), ("ecdsa", ec.EllipticCurvePublicKey)],
)
@pytest.mark.parametrize("wildcard", [False, True])
def test_the_job_issues_a_certificate(admin, factory, key_type, key_class, wildcard):
    domain = ("*." if wildcard else "") + custom()
    policy = {"private_key_type": key_type}
    rd = admin.post(PATH, json={"domain": domain, "certificate_management_policy": policy})
    rd = rd.json()
    assert rd["certificate_management_status"]["provisioning_job"] is not None

    got = admin.get(f"{PATH}/{rd['id']}").json()  # the delay is 0: completed by now
    status = got["certificate_management_status"]
    assert status["provisioning_job"] is None
    cert_id = got["certificate"]["id"]
    assert got["certificate"]["uri"] == f"http://testserver/tls_certificates/{cert_id}"
    assert got["certificate_management_policy"] == rd["certificate_management_policy"]
    assert admin.get(f"{PATH}/{rd['id']}").json() == got  # settled once, stable

    row = _row(factory, TlsCertificate, cert_id)
    assert (row.account_id, row.issued_for_id) == (admin.creds.account_id, rd["id"])
    assert "certificate management" in row.description
    leaf = x509.load_pem_x509_certificate(row.certificate_pem.encode())
    san = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.DNSName) == [domain]
    eku = leaf.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(eku) == [ExtendedKeyUsageOID.SERVER_AUTH]
    assert isinstance(leaf.public_key(), key_class)
    leaf.verify_directly_issued_by(_issuing_ca(factory))  # raises if the signature is bad

    started = _at(rd["certificate_management_status"]["provisioning_job"]["started_at"])
    assert leaf.not_valid_before_utc == started  # completed at started_at + 0 s
    assert leaf.not_valid_after_utc - leaf.not_valid_before_utc == timedelta(days=90)
    assert _at(status["renews_at"]) == leaf.not_valid_after_utc - timedelta(days=30)

    der = keys.unwrap(keys.current(), row.wrapped_private_key, cert_id.encode())
    key = serialization.load_der_private_key(der, password=None)
    assert key.public_key().public_numbers() == leaf.public_key().public_numbers()  # type: ignore[union-attr]


def test_list_settles_due_domains(admin):
    rd = admin.post(PATH, json={"domain": custom(), "certificate_management_policy": {}}).json()
    plain = admin.post(PATH, json={"domain": custom()}).json()
    listed = {d["id"]: d for d in admin.get(PATH).json()["reserved_domains"]}
    assert listed[rd["id"]]["certificate"] is not None
    assert listed[rd["id"]]["certificate_management_status"]["provisioning_job"] is None
    assert listed[plain["id"]] == plain
    assert admin.get(f"{PATH}/{rd['id']}").json() == listed[rd["id"]]


def test_invalid_tld_fails_with_dns_error(admin):
    domain = f"{label()}.example.invalid"
    rd = admin.post(PATH, json={"domain": domain, "certificate_management_policy": {}}).json()
    started = rd["certificate_management_status"]["provisioning_job"]["started_at"]
    got = admin.get(f"{PATH}/{rd['id']}").json()
    assert got["certificate"] is None
    status = got["certificate_management_status"]
    assert status["renews_at"] is None
    job = status["provisioning_job"]
    assert job["error_code"] == "DNS_ERROR"
    assert domain in job["msg"]
    assert ".invalid" in job["msg"]
    assert job["started_at"] == started
    assert _at(job["retries_at"]) == _at(started) + timedelta(seconds=300)
    # No certificate to detach: the failing job goes on (tests/api/test_detach_certificate.py).
    assert admin.delete(f"{PATH}/{rd['id']}/certificate").status_code == 204
    assert admin.get(f"{PATH}/{rd['id']}").json()["certificate_management_status"] == status


def test_update_attaches_an_uploaded_certificate_and_detaches_the_policy(admin, factory):
    cert = _cert(factory, admin.creds.account_id)
    rd = admin.post(PATH, json={"domain": custom(), "certificate_management_policy": {}}).json()
    url = f"{PATH}/{rd['id']}"
    updated = admin.patch(url, json={"certificate_id": cert.id}).json()
    assert updated["certificate"]["id"] == cert.id
    assert updated["certificate_management_policy"] is None
    assert updated["certificate_management_status"] is None
    assert admin.get(url).json() == updated
    # The job that was due completed first: its certificate was issued, then replaced.
    issued = _row(factory, ReservedDomain, rd["id"])
    assert issued.certificate_id == cert.id


def test_update_attaches_a_policy_and_detaches_the_certificate(admin, factory):
    cert = _cert(factory, admin.creds.account_id)
    rd = admin.post(PATH, json={"domain": custom(), "certificate_id": cert.id}).json()
    url = f"{PATH}/{rd['id']}"
    policy = {"private_key_type": "ecdsa"}
    updated = admin.patch(url, json={"certificate_management_policy": policy}).json()
    assert updated["certificate"] is None
    assert updated["certificate_management_policy"] == {
        "authority": "letsencrypt",
        "private_key_type": "ecdsa",
    }
    job = updated["certificate_management_status"]["provisioning_job"]
    assert (job["msg"], job["error_code"]) == (JOB_MSG, None)

    issued = admin.get(url).json()
    assert issued["certificate"] is not None
    # The same policy again (after defaults) changes nothing: no new job, same certificate.
    same = admin.patch(url, json={"certificate_management_policy": {**policy, "authority": ""}})
    assert same.json() == issued
    # Another key type starts a new job and detaches the issued certificate.
    rsa_policy = admin.patch(url, json={"certificate_management_policy": {}}).json()
    assert rsa_policy["certificate"] is None
    assert rsa_policy["certificate_management_policy"]["private_key_type"] == "rsa"
    assert rsa_policy["certificate_management_status"]["provisioning_job"] is not None
    renewed = admin.get(url).json()
    assert renewed["certificate"]["id"] != issued["certificate"]["id"]


def test_update_rules(admin, other, factory):
    rd = admin.post(PATH, json={"domain": custom()}).json()
    url = f"{PATH}/{rd['id']}"
    cert = _cert(factory, admin.creds.account_id)
    error = assert_error(
        admin.patch(url, json={"certificate_id": cert.id, "certificate_management_policy": {}}),
        400,
        "ERR_CONFLICTING_FIELDS",
    )
    assert error["details"]["field"] == "certificate_management_policy"
    for body, code, field in (
        ({"domain": "x.example.com"}, "ERR_UNKNOWN_FIELD", "domain"),
        ({"name": "x"}, "ERR_UNKNOWN_FIELD", "name"),
        ({"region": "eu"}, "ERR_UNKNOWN_FIELD", "region"),
        ({"certificate_id": "cert_x"}, "ERR_INVALID_FIELD", "certificate_id"),
        ({"http_endpoint_configuration_id": "ep_x"}, "ERR_INVALID_FIELD",
         "http_endpoint_configuration_id"),
        ({"metadata": "x" * 4097}, "ERR_FIELD_TOO_LONG", "metadata"),
    ):  # fmt: skip
        assert assert_error(admin.patch(url, json=body), 400, code)["details"]["field"] == field
    theirs = _cert(factory, other.creds.account_id)
    error = assert_error(
        admin.patch(url, json={"certificate_id": theirs.id}), 404, "ERR_REFERENCE_NOT_FOUND"
    )
    assert error["details"]["field"] == "certificate_id"
    assert admin.get(url).json() == rd


def test_update_endpoint_configurations(admin, other, factory):
    rd = admin.post(PATH, json={"domain": custom()}).json()
    url = f"{PATH}/{rd['id']}"
    http = factory.row(EndpointConfiguration, admin.creds.account_id, type="http")
    https = factory.row(EndpointConfiguration, admin.creds.account_id, type="https")
    theirs = factory.row(EndpointConfiguration, other.creds.account_id)
    updated = admin.patch(
        url,
        json={
            "http_endpoint_configuration_id": http.id,
            "https_endpoint_configuration_id": https.id,
        },
    ).json()
    assert updated["http_endpoint_configuration"] == {
        "id": http.id,
        "uri": f"http://testserver/endpoint_configurations/{http.id}",
    }
    assert updated["https_endpoint_configuration"]["id"] == https.id
    # Null leaves a reference as it is; "" clears it.
    kept = admin.patch(url, json={"http_endpoint_configuration_id": None}).json()
    assert kept == updated
    cleared = admin.patch(url, json={"http_endpoint_configuration_id": ""}).json()
    assert cleared["http_endpoint_configuration"] is None
    assert cleared["https_endpoint_configuration"]["id"] == https.id
    for field in ("http_endpoint_configuration_id", "https_endpoint_configuration_id"):
        for ec_id in (theirs.id, "ec_" + "0" * 27):
            error = assert_error(
                admin.patch(url, json={field: ec_id}), 404, "ERR_REFERENCE_NOT_FOUND"
            )
            assert error["details"]["field"] == field
    assert admin.get(url).json() == cleared


def test_detach_policy_keeps_the_certificate(admin):
    rd = admin.post(PATH, json={"domain": custom(), "certificate_management_policy": {}}).json()
    url = f"{PATH}/{rd['id']}"
    # Detach settles first: the job that completed meanwhile leaves its certificate.
    response = admin.delete(f"{url}/certificate_management_policy")
    assert response.status_code == 204
    assert response.content == b""
    got = admin.get(url).json()
    assert got["certificate"] is not None
    assert got["certificate_management_policy"] is None
    assert got["certificate_management_status"] is None
    assert admin.delete(f"{url}/certificate_management_policy").status_code == 204  # none
    assert admin.get(url).json() == got


def test_detach_certificate(admin, factory):
    rd = admin.post(PATH, json={"domain": custom(), "certificate_management_policy": {}}).json()
    url = f"{PATH}/{rd['id']}"
    assert admin.delete(f"{url}/certificate_management_policy").status_code == 204
    issued_id = admin.get(url).json()["certificate"]["id"]
    response = admin.delete(f"{url}/certificate")
    assert response.status_code == 204
    assert response.content == b""
    assert admin.get(url).json()["certificate"] is None
    assert admin.delete(f"{url}/certificate").status_code == 204  # none attached
    # The certificate itself is kept.
    assert _row(factory, TlsCertificate, issued_id) is not None


def test_delete_keeps_issued_certificates(admin, factory):
    rd = admin.post(PATH, json={"domain": custom(), "certificate_management_policy": {}}).json()
    cert_id = admin.get(f"{PATH}/{rd['id']}").json()["certificate"]["id"]
    assert admin.delete(f"{PATH}/{rd['id']}").status_code == 204
    assert _row(factory, TlsCertificate, cert_id).issued_for_id == rd["id"]


def test_list_pages_newest_first(admin):
    made = [admin.post(PATH, json={"domain": custom()}).json()["id"] for _ in range(5)][::-1]
    first = admin.get(PATH, params={"limit": 2}).json()
    assert [d["id"] for d in first["reserved_domains"]] == made[:2]
    assert first["uri"] == "http://testserver/reserved_domains"
    assert first["next_page_uri"] == (
        f"http://testserver/reserved_domains?limit=2&before_id={made[1]}"
    )
    seen = [d["id"] for d in first["reserved_domains"]]
    next_uri = first["next_page_uri"]
    while next_uri:
        page = admin.get(next_uri.removeprefix("http://testserver")).json()
        assert page["reserved_domains"], "a next_page_uri never leads to an empty page"
        seen += [d["id"] for d in page["reserved_domains"]]
        next_uri = page["next_page_uri"]
    assert seen == made
    alias = admin.get(PATH, params={"beforeId": made[2]}).json()
    assert [d["id"] for d in alias["reserved_domains"]] == made[3:]
    assert admin.get(PATH, params={"limit": 5}).json()["next_page_uri"] is None
    assert_error(admin.get(PATH, params={"before_id": "ak_" + "0" * 27}), 400,
                 "ERR_INVALID_PARAMETER")  # fmt: skip


def test_other_accounts_see_nothing(admin, other, factory):
    rd = admin.post(PATH, json={"domain": custom(), "certificate_management_policy": {}}).json()
    url = f"{PATH}/{rd['id']}"
    assert_error(other.get(url), 404, "ERR_NOT_FOUND")
    assert_error(other.patch(url, json={"description": "x"}), 404, "ERR_NOT_FOUND")
    assert_error(other.delete(f"{url}/certificate_management_policy"), 404, "ERR_NOT_FOUND")
    assert_error(other.delete(f"{url}/certificate"), 404, "ERR_NOT_FOUND")
    assert_error(other.delete(url), 404, "ERR_NOT_FOUND")
    assert other.get(PATH).json()["reserved_domains"] == []
    assert admin.get(url).json()["certificate_management_policy"] is not None


def test_concurrent_first_uses_share_one_issuing_ca(factory):
    import asyncio

    name = f"race-{uuid.uuid4().hex[:8]}"

    async def one() -> str:
        async with db.write() as session:
            return (await certstore.issuing_authority(session, name)).certificate_pem

    async def race() -> list[str]:
        return list(await asyncio.gather(*(one() for _ in range(6))))

    pems = factory._run(race)
    assert len(set(pems)) == 1
    ca = x509.load_pem_x509_certificate(pems[0].encode())
    assert ca.subject.rfc4514_string() == f"CN=tunnelgw issuing CA ({name})"


@pytest.mark.inprocess
def test_the_served_spec_and_validation_follow_the_authority_setting(admin, settings, http):
    before = tunnelgw_settings.current()
    app = create_app(settings.model_copy(update={"certificate_authority": "zerossl"}))
    # A second app in the process, with settings of its own: it installs nothing global. It
    # serves on one event loop (its lifespan runs): database connections belong to a loop.
    with TestClient(app, base_url="http://testserver", raise_server_exceptions=False) as client:
        spec = client.get("/openapi.json").json()
        policy = spec["components"]["schemas"]["ReservedDomainCertPolicy"]
        assert policy["properties"]["authority"]["enum"] == ["zerossl", "", None]
        headers = {"Authorization": f"Bearer {admin.creds.token}", "Service-Version": "2"}

        def create(authority: str):  # type: ignore[no-untyped-def]
            body = {"domain": custom(), "certificate_management_policy": {"authority": authority}}
            return client.post(PATH, json=body, headers=headers)

        assert_error(create("letsencrypt"), 400, "ERR_INVALID_FIELD")
        made = create("")
        assert made.status_code == 201, made.text
        assert made.json()["certificate_management_policy"]["authority"] == "zerossl"
        assert create("zerossl").status_code == 201
    assert tunnelgw_settings.current() is before
    # The session's app still speaks the file's authority.
    assert http.get("/openapi.json").json()["components"]["schemas"]["ReservedDomainCertPolicy"][
        "properties"
    ]["authority"]["enum"] == ["letsencrypt", "", None]
    assert (
        admin.post(
            PATH,
            json={"domain": custom(), "certificate_management_policy": {"authority": "zerossl"}},
        ).status_code
        == 400
    )


@pytest.mark.inprocess
@pytest.mark.parametrize("key_type", ["rsa", "ecdsa"])
def test_the_issued_key_is_made_before_the_write_unit(admin, monkeypatch, key_type):
    """A read that settles a due job makes the certificate's key first, outside the unit
    that holds the row lock (on SQLite, every process's writes): the unit only signs."""
    from tunnelgw.crypto import issuing
    from tunnelgw.storage import db

    made_in_unit: list[bool] = []
    real_new_key, real_write = issuing.new_key, db.Database.write
    inside = {"depth": 0}

    def new_key(kind: str):  # type: ignore[no-untyped-def]
        made_in_unit.append(inside["depth"] > 0)
        return real_new_key(kind)

    class Counting:
        def __init__(self, scope) -> None:  # type: ignore[no-untyped-def]
            self.scope = scope

        async def __aenter__(self):  # type: ignore[no-untyped-def]
            inside["depth"] += 1
            return await self.scope.__aenter__()

        async def __aexit__(self, *exc):  # type: ignore[no-untyped-def]
            try:
                return await self.scope.__aexit__(*exc)
            finally:
                inside["depth"] -= 1

    monkeypatch.setattr(issuing, "new_key", new_key)
    monkeypatch.setattr(db.Database, "write", lambda self: Counting(real_write(self)))
    policy = {"private_key_type": key_type}
    rd = admin.post(PATH, json={"domain": custom(), "certificate_management_policy": policy})
    issued = admin.get(f"{PATH}/{rd.json()['id']}").json()
    assert issued["certificate"] is not None
    assert made_in_unit == [False]


def test_empty_certificate_id_is_unset(admin, factory):
    """What the platform's Terraform provider sends on every update of a domain without an
    uploaded certificate (its state holds `""` for none): `certificate_id: ""` changes
    nothing, with or without a policy beside it, and creates as if absent."""
    rd = admin.post(PATH, json={"domain": custom(), "certificate_id": ""})
    assert rd.status_code == 201, rd.text
    url = f"{PATH}/{rd.json()['id']}"
    patched = admin.patch(url, json={"certificate_id": "", "description": "d"}).json()
    assert (patched["certificate"], patched["description"]) == (None, "d")
    both = admin.patch(url, json={"certificate_id": "", "certificate_management_policy": {}})
    assert both.status_code == 200, both.text
    assert both.json()["certificate_management_policy"] is not None
    cert = _cert(factory, admin.creds.account_id)
    attached = admin.patch(url, json={"certificate_id": cert.id}).json()
    assert attached["certificate"]["id"] == cert.id
    kept = admin.patch(url, json={"certificate_id": "", "description": "e"}).json()
    assert kept["certificate"]["id"] == cert.id
