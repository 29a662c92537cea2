"""The platform profile (`TUNNELGW_PROFILE=platform`): each mapped failure answered with the
platform's error code, status and message, tunnelgw's code kept in `details.tunnelgw_code`;
and the same request to a server without the profile answered as before.

Two apps serve one database here: the suite's own (no profile) and one with the profile; an
account made by the factory is the same account on both. Responses of the profile's app are
validated against the spec it publishes.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from starlette.testclient import TestClient

from tests.factories import ApiClient, Factory, Session, tls_upload
from tests.openapi_check import SpecValidator
from tunnelgw.core import platform_errors
from tunnelgw.core.settings import Settings
from tunnelgw.http.app import create_app

# One process runs them all, in order (under pytest-xdist too: WHOLE_MODULES in
# tests/conftest.py): the last test checks what the others answered in this process.
pytestmark = pytest.mark.inprocess

SHARED = "tunnelgw.test"
POLICY = """
on_http_request:
  - actions:
      - type: custom-response
        config: {status_code: 200, body: hi}
"""
# Kinds whose quota is 1 on the quota app (test_quotas_of_families).
QUOTA_KINDS = (
    "reserved_domain", "reserved_addr", "api_key", "credential", "vault", "event_destination",
    "event_subscription", "endpoint",
)  # fmt: skip
TCP_POLICY = '{"on_tcp_connect": [{"actions": [{"type": "deny"}]}]}'
# Every platform code a test below saw answered; the last test checks that the catalog's
# codes are all among them.
SEEN: set[str] = set()


def _serve(settings: Settings, **changes: Any) -> Iterator[TestClient]:
    app = create_app(settings.model_copy(update={"profile": "platform", **changes}))
    with TestClient(
        app, base_url="http://testserver", raise_server_exceptions=False, client=("127.0.0.1", 1)
    ) as client:
        yield client


@pytest.fixture(scope="module")
def profile_http(settings: Settings) -> Iterator[TestClient]:
    yield from _serve(settings)


@pytest.fixture(scope="module")
def quota_http(settings: Settings) -> Iterator[TestClient]:
    """The profile with small quotas: 2 IP policies, 1 of each of QUOTA_KINDS."""
    yield from _serve(settings, quotas=f"ip_policy=2,{','.join(f'{k}=1' for k in QUOTA_KINDS)}")


@pytest.fixture(scope="module")
def profile_validator(profile_http: TestClient) -> SpecValidator:
    return SpecValidator(profile_http.get("/openapi.json").json())


class Pair:
    """One account's client on both apps."""

    def __init__(self, plain: Session, profiled: ApiClient) -> None:
        self.plain = plain
        self.profiled = profiled

    def expect(
        self,
        method: str,
        path: str,
        *,
        tunnelgw: tuple[int, str],
        platform: tuple[int, str | None, str],
        **kw: Any,
    ) -> dict[str, Any]:
        """Send the request to both apps: tunnelgw's (status, code) without the profile; the
        platform's (status, code or None, a regex its msg matches) with it. The profile's
        body is returned."""
        before = self.plain.request(method, path, **kw)
        assert (before.status_code, before.json()["error_code"]) == tunnelgw, before.text
        return self.platform(method, path, platform, tunnelgw[1], **kw)

    def platform(
        self,
        method: str,
        path: str,
        expected: tuple[int, str | None, str],
        tunnelgw_code: str,
        **kw: Any,
    ) -> dict[str, Any]:
        status, code, msg = expected
        answer = self.profiled.request(method, path, **kw)
        body: dict[str, Any] = answer.json()
        assert answer.status_code == status, answer.text
        assert body.get("error_code") == code, body
        assert body["status_code"] == status
        assert re.search(msg, body["msg"]), body["msg"]
        assert not re.search(r"\{[a-z_]+\}", body["msg"]), body["msg"]  # values filled in
        assert body["details"]["tunnelgw_code"] == tunnelgw_code
        assert body["details"]["operation_id"] == answer.headers["operation-id"]
        if code is not None:
            SEEN.add(code)
        return body


@pytest.fixture
def pair(admin: Session, profile_http: TestClient, profile_validator: SpecValidator) -> Pair:
    return Pair(admin, ApiClient(profile_http, profile_validator, admin.creds.token))


@pytest.fixture
def quota_pair(admin: Session, quota_http: TestClient, profile_validator: SpecValidator) -> Pair:
    return Pair(admin, ApiClient(quota_http, profile_validator, admin.creds.token))


def _name(prefix: str = "p") -> str:
    return f"{prefix}{uuid.uuid4().hex[:10]}"


# Authentication and the version header.


def test_authentication(pair: Pair) -> None:
    pair.expect(
        "GET",
        "/api_keys",
        token=None,
        tunnelgw=(401, "ERR_AUTHENTICATION_REQUIRED"),
        platform=(403, "ERR_NGROK_200", r"requires that you set the Authorization header"),
    )
    pair.expect(
        "GET",
        "/api_keys",
        headers={"Authorization": "Basic dXNlcjpwYXNz"},
        tunnelgw=(401, "ERR_INVALID_CREDENTIALS"),
        platform=(403, "ERR_NGROK_201", r"Authorization Header: 'Basic dX\.\.\.'\.$"),
    )
    unknown = "tgw_" + "x" * 43
    body = pair.expect(
        "GET",
        "/api_keys",
        token=unknown,
        tunnelgw=(401, "ERR_INVALID_CREDENTIALS"),
        platform=(403, "ERR_NGROK_203", r"properly formed, but it is invalid"),
    )
    assert "tgw_xxxx..." in body["msg"]  # quoted, not echoed
    assert unknown not in body["msg"]
    pair.expect(
        "GET",
        "/api_keys",
        token="x" * 600,
        tunnelgw=(401, "ERR_INVALID_CREDENTIALS"),
        platform=(403, "ERR_NGROK_202", r"does not look like a valid credential"),
    )


def test_version_header(pair: Pair) -> None:
    pair.expect(
        "GET",
        "/api_keys",
        version=None,
        tunnelgw=(400, "ERR_VERSION_HEADER_MISSING"),
        platform=(400, "ERR_NGROK_218", r"in the Ngrok-Version header\. Supported versions: 2\."),
    )
    pair.expect(
        "GET",
        "/api_keys",
        version="3",
        tunnelgw=(400, "ERR_VERSION_UNSUPPORTED"),
        platform=(400, "ERR_NGROK_217", r"The provided API version '3' is invalid"),
    )
    # The platform's clients send Ngrok-Version: accepted by the profile alone.
    theirs = {"Ngrok-Version": "2"}
    assert pair.profiled.get("/api_keys", version=None, headers=theirs).status_code == 200
    plain = pair.plain.get("/api_keys", version=None, headers=theirs)
    assert (plain.status_code, plain.json()["error_code"]) == (400, "ERR_VERSION_HEADER_MISSING")


# Decoding the body.


def test_body_decoding(pair: Pair) -> None:
    pair.expect(
        "POST",
        "/api_keys",
        content=b"{}",
        headers={"Content-Type": "text/plain"},
        tunnelgw=(415, "ERR_UNSUPPORTED_MEDIA_TYPE"),
        platform=(415, "ERR_NGROK_210", r"content type you specified 'text/plain'"),
    )
    pair.expect(
        "POST",
        "/api_keys",
        content=b"{nope",
        headers={"Content-Type": "application/json"},
        tunnelgw=(400, "ERR_INVALID_JSON"),
        platform=(400, "ERR_NGROK_213", r"request body could not be parsed"),
    )
    pair.expect(
        "POST",
        "/api_keys",
        content=b"[1]",
        headers={"Content-Type": "application/json"},
        tunnelgw=(400, "ERR_INVALID_BODY"),
        platform=(400, "ERR_NGROK_213", r"request body could not be parsed"),
    )
    pair.expect(
        "POST",
        "/api_keys",
        json={"descripton": "typo"},
        tunnelgw=(400, "ERR_UNKNOWN_FIELD"),
        platform=(
            400,
            "ERR_NGROK_214",
            r"parameter 'descripton' is unknown.*supported fields are: .*description",
        ),
    )
    pair.expect(
        "POST",
        "/api_keys",
        json={"owner_id": "nobody"},
        tunnelgw=(400, "ERR_INVALID_FIELD"),
        platform=(400, "ERR_NGROK_215", r"value provided for the request parameter 'owner_id'"),
    )
    pair.expect(
        "POST",
        "/api_keys",
        json={"description": 5},
        tunnelgw=(400, "ERR_WRONG_TYPE"),
        platform=(400, "ERR_NGROK_215", r"value provided for the request parameter 'description'"),
    )


# Field limits.


@pytest.mark.parametrize(
    ("path", "body", "code", "msg"),
    [
        (
            "/reserved_domains",
            {"domain": "limit.example.com", "description": "d" * 300},
            "ERR_NGROK_420",
            r"description is limited to 255 characters; you have entered 300 characters\.",
        ),
        (
            "/reserved_domains",
            {"domain": "limit.example.com", "metadata": "m" * 5000},
            "ERR_NGROK_421",
            r"Metadata is limited to 4096 characters; you have entered 5000 characters\.",
        ),
        (
            "/reserved_addrs",
            {"description": "d" * 256},
            "ERR_NGROK_504",
            r"limited to 255 characters; you have entered 256",
        ),
        (
            "/reserved_addrs",
            {"metadata": "m" * 4097},
            "ERR_NGROK_505",
            r"limited to 4096 characters; you have entered 4097",
        ),
        ("/api_keys", {"description": "d" * 256}, "ERR_NGROK_604", r"limited to 255"),
        ("/credentials", {"metadata": "m" * 4097}, "ERR_NGROK_605", r"limited to 4096"),
        (
            "/endpoints",
            {
                "url": "https://x.tunnelgw.test",
                "type": "cloud",
                "traffic_policy": POLICY,
                "description": "d" * 256,
            },
            "ERR_NGROK_18012",
            r"description field cannot be longer than 255 characters",
        ),
        (
            "/endpoints",
            {
                "url": "https://x.tunnelgw.test",
                "type": "cloud",
                "traffic_policy": POLICY,
                "metadata": "m" * 4097,
            },
            "ERR_NGROK_18013",
            r"metadata field cannot be longer than 4096 characters",
        ),
        (
            "/agent_ingresses",
            {"domain": "ingress.example.com", "description": "d" * 256},
            "ERR_NGROK_6700",
            r"limited to 255 characters, but the provided value had 256",
        ),
        (
            "/agent_ingresses",
            {"domain": "ingress.example.com", "metadata": "m" * 4097},
            "ERR_NGROK_6701",
            r"limited to 4096 characters, but the provided value had 4097",
        ),
        (
            "/bot_users",
            {"name": "n" * 256},
            "ERR_NGROK_4110",
            r"Service User name exceeds max length, 256 bytes, max: 255\.",
        ),
    ],
)
def test_field_limits(pair: Pair, path: str, body: dict[str, Any], code: str, msg: str) -> None:
    pair.expect(
        "POST",
        path,
        json=body,
        tunnelgw=(400, "ERR_FIELD_TOO_LONG"),
        platform=(400, code, msg),
    )


def test_vault_and_secret_limits(pair: Pair) -> None:
    vault = _vault(pair)
    checks = [
        ("/vaults", {"name": "v" * 500}, "ERR_NGROK_23002", r"vault name must be less than"),
        (
            "/vault_secrets",
            {"vault_id": vault, "name": "s" * 500, "value": "x"},
            "ERR_NGROK_24002",
            r"secret name must be less than",
        ),
    ]
    for path, body, code, msg in checks:
        pair.expect(
            "POST", path, json=body, tunnelgw=(400, "ERR_FIELD_TOO_LONG"), platform=(400, code, msg)
        )


# Missing fields a family has a code for.


def test_missing_fields(pair: Pair) -> None:
    pair.expect(
        "POST",
        "/endpoints",
        json={"type": "cloud", "traffic_policy": POLICY},
        tunnelgw=(400, "ERR_MISSING_FIELD"),
        platform=(400, "ERR_NGROK_18015", r"missing the required field 'url'"),
    )
    pair.expect(
        "POST",
        "/ssh_credentials",
        json={"description": "no key"},
        tunnelgw=(400, "ERR_MISSING_FIELD"),
        platform=(400, "ERR_NGROK_611", r"Public key is missing or empty\."),
    )
    ca = pair.plain.post("/ssh_certificate_authorities", json={}).json()["id"]
    for path in ("/ssh_host_certificates", "/ssh_user_certificates"):
        pair.expect(
            "POST",
            path,
            json={"ssh_certificate_authority_id": ca, "principals": ["a"]},
            tunnelgw=(400, "ERR_MISSING_FIELD"),
            platform=(400, "ERR_NGROK_1952", r"public key to sign in the certificate is required"),
        )
    pair.expect(
        "POST",
        "/event_destinations",
        json={"description": "nowhere"},
        tunnelgw=(400, "ERR_MISSING_FIELD"),
        platform=(400, "ERR_NGROK_5100", r"must specify a destination target"),
    )


# List parameters and filters.


def test_list_parameters(pair: Pair) -> None:
    pair.expect(
        "GET",
        "/api_keys",
        params={"limit": "0"},
        tunnelgw=(400, "ERR_INVALID_PARAMETER"),
        platform=(400, "ERR_NGROK_233", r"between 1 and 100 but '0' was provided"),
    )
    pair.expect(
        "GET",
        "/api_keys",
        params={"limit": "ten"},
        tunnelgw=(400, "ERR_INVALID_PARAMETER"),
        platform=(400, "ERR_NGROK_244", r"must be a number between 1 and 100 but 'ten'"),
    )
    pair.expect(
        "GET",
        "/api_keys?limit=1&limit=2",
        tunnelgw=(400, "ERR_INVALID_PARAMETER"),
        platform=(400, "ERR_NGROK_232", r"single value for the 'limit' parameter but got 2: 1, 2"),
    )
    pair.expect(
        "GET",
        "/api_keys",
        params={"limt": "1"},
        tunnelgw=(400, "ERR_INVALID_PARAMETER"),
        platform=(400, "ERR_NGROK_231", r"unknown parameters: 'limt'.*supported.*before_id"),
    )
    for text, code in [
        ("obj.id ==", "ERR_FILTER_SYNTAX"),
        ('obj.nope == "x"', "ERR_FILTER_UNKNOWN_FIELD"),
        ("obj.id > 3", "ERR_FILTER_TYPE"),
        ("x" * 5000, "ERR_FILTER_TOO_LONG"),
    ]:
        pair.expect(
            "GET",
            "/api_keys",
            params={"filter": text},
            tunnelgw=(400, code),
            platform=(400, "ERR_NGROK_250", r"^Invalid CEL query: "),
        )


# Not found.


def test_not_found_has_no_code(pair: Pair) -> None:
    pair.expect(
        "GET",
        "/api_keys/ak_000000000000000000000000000",
        tunnelgw=(404, "ERR_NOT_FOUND"),
        platform=(404, None, r"^Resource not found$"),
    )
    pair.expect(
        "DELETE",
        "/ip_policies/ipp_000000000000000000000000000",
        tunnelgw=(404, "ERR_NOT_FOUND"),
        platform=(404, None, r"^Resource not found$"),
    )
    pair.expect(
        "GET",
        "/no_such_things",
        tunnelgw=(404, "ERR_ROUTE_NOT_FOUND"),
        platform=(404, None, r"^Not Found$"),
    )


def test_references_that_do_not_exist(pair: Pair) -> None:
    missing_ca = "sshca_000000000000000000000000000"
    for path, code in (("/ssh_host_certificates", "1949"), ("/ssh_user_certificates", "1951")):
        pair.expect(
            "POST",
            path,
            json={"ssh_certificate_authority_id": missing_ca, "public_key": _ssh_key()},
            tunnelgw=(404, "ERR_REFERENCE_NOT_FOUND"),
            platform=(404, f"ERR_NGROK_{code}", rf"The SSH CA '{missing_ca}' does not exist\."),
        )
    missing_policy = "ipp_000000000000000000000000000"
    pair.expect(
        "POST",
        "/ip_restrictions",
        json={"type": "dashboard", "ip_policy_ids": [missing_policy]},
        tunnelgw=(404, "ERR_REFERENCE_NOT_FOUND"),
        platform=(404, "ERR_NGROK_1801", rf"The policy '{missing_policy}' does not exist"),
    )
    pair.expect(
        "POST",
        "/ip_policy_rules",
        json={"ip_policy_id": missing_policy, "cidr": "10.0.0.0/8", "action": "allow"},
        tunnelgw=(404, "ERR_REFERENCE_NOT_FOUND"),
        platform=(404, "ERR_NGROK_1402", r"^IP Policy not found$"),
    )
    missing_destination = "ed_000000000000000000000000000"
    pair.expect(
        "POST",
        "/event_subscriptions",
        json={"destination_ids": [missing_destination]},
        tunnelgw=(404, "ERR_REFERENCE_NOT_FOUND"),
        platform=(
            404,
            "ERR_NGROK_5103",
            rf"No event destinations with ID: '{missing_destination}'",
        ),
    )
    missing_vault = "vault_000000000000000000000000000"
    pair.expect(
        "POST",
        "/vault_secrets",
        json={"vault_id": missing_vault, "name": "a", "value": "b"},
        tunnelgw=(404, "ERR_REFERENCE_NOT_FOUND"),
        platform=(404, "ERR_NGROK_24006", rf"Vault with ID '{missing_vault}' not found\."),
    )
    pair.expect(
        "POST",
        "/vault_secrets",
        json={"vault_name": "nope", "name": "a", "value": "b"},
        tunnelgw=(404, "ERR_REFERENCE_NOT_FOUND"),
        platform=(404, "ERR_NGROK_24009", r"Vault not found with name: 'nope'"),
    )


# Duplicates, references in use, limits.


def test_reserved_domain_duplicates(pair: Pair, other: Session) -> None:
    domain = f"{_name()}.example.com"
    assert pair.plain.post("/reserved_domains", json={"domain": domain}).status_code == 201
    pair.expect(
        "POST",
        "/reserved_domains",
        json={"domain": domain},
        tunnelgw=(409, "ERR_DOMAIN_IN_USE"),
        platform=(
            400,
            "ERR_NGROK_413",
            rf"^This domain is already reserved for your account\. Failed to reserve '{domain}'\.$",
        ),
    )
    theirs = Pair(other, ApiClient(pair.profiled.http, pair.profiled.validator, other.creds.token))
    theirs.expect(
        "POST",
        "/reserved_domains",
        json={"domain": domain},
        tunnelgw=(409, "ERR_DOMAIN_IN_USE"),
        platform=(400, "ERR_NGROK_414", r"already reserved for another account"),
    )
    pair.expect(
        "POST",
        "/reserved_domains",
        json={"domain": "x.example.com", "certificate_id": "cert_000000000000000000000000000",
              "certificate_management_policy": {"authority": "letsencrypt"}},
        tunnelgw=(400, "ERR_CONFLICTING_FIELDS"),
        platform=(400, "ERR_NGROK_434", r"certificate or a certificate management policy"),
    )  # fmt: skip
    pair.expect(
        "POST",
        "/reserved_domains",
        json={"domain": "x.example.com", "name": "y.example.com"},
        tunnelgw=(400, "ERR_CONFLICTING_FIELDS"),
        platform=(400, "ERR_NGROK_449", r"only specify one of 'name' or 'domain'"),
    )


def test_domain_used_by_a_cloud_endpoint_is_not_deleted(pair: Pair) -> None:
    host = f"{_name()}.{SHARED}"
    made = pair.plain.post(
        "/endpoints", json={"url": f"https://{host}", "type": "cloud", "traffic_policy": POLICY}
    )
    assert made.status_code == 201, made.text
    endpoint, domain = made.json()["id"], made.json()["domain"]["id"]
    refused = pair.expect(
        "DELETE",
        f"/reserved_domains/{domain}",
        tunnelgw=(409, "ERR_DOMAIN_REFERENCED"),
        platform=(400, "ERR_NGROK_446", rf"The domain '{host}' could not be deleted"),
    )
    assert refused["details"]["endpoints"] == endpoint
    assert pair.plain.get(f"/reserved_domains/{domain}").status_code == 200
    assert pair.plain.delete(f"/endpoints/{endpoint}").status_code == 204
    assert pair.profiled.delete(f"/reserved_domains/{domain}").status_code == 204


def test_agent_ingress_domains(pair: Pair) -> None:
    domain = f"{_name()}.example.net"
    assert pair.plain.post("/agent_ingresses", json={"domain": domain}).status_code == 201
    pair.expect(
        "POST",
        "/agent_ingresses",
        json={"domain": domain},
        tunnelgw=(409, "ERR_DOMAIN_IN_USE"),
        platform=(400, "ERR_NGROK_6706", rf'agent ingress domain "{domain}" already exists'),
    )
    pair.expect(
        "POST",
        "/agent_ingresses",
        json={"domain": f"x.{SHARED}"},
        tunnelgw=(409, "ERR_DOMAIN_IN_USE"),
        platform=(400, "ERR_NGROK_6705", r"must be a third party domain"),
    )


def test_in_use_and_taken(pair: Pair) -> None:
    policy = pair.plain.post("/ip_policies", json={}).json()["id"]
    restriction = pair.plain.post(
        "/ip_restrictions", json={"type": "dashboard", "ip_policy_ids": [policy]}
    ).json()["id"]
    pair.expect(
        "DELETE",
        f"/ip_policies/{policy}",
        tunnelgw=(409, "ERR_IP_POLICY_IN_USE"),
        platform=(
            400,
            "ERR_NGROK_1420",
            rf"Cannot delete IP Policy \({policy}\).*Restrictions: \({restriction}\)",
        ),
    )
    destination = pair.plain.post(
        "/event_destinations", json={"target": {"datadog": {"api_key": "k"}}}
    ).json()["id"]
    subscription = pair.plain.post(
        "/event_subscriptions", json={"destination_ids": [destination]}
    ).json()["id"]
    pair.expect(
        "DELETE",
        f"/event_destinations/{destination}",
        tunnelgw=(409, "ERR_EVENT_DESTINATION_IN_USE"),
        platform=(400, "ERR_NGROK_5112", rf'Event Destination "{destination}" cannot be deleted'),
    )
    source = {"type": "ip_policy_created.v0"}
    sources = f"/event_subscriptions/{subscription}/sources"
    assert pair.plain.post(sources, json=source).status_code == 201
    pair.expect(
        "POST",
        sources,
        json=source,
        tunnelgw=(409, "ERR_EVENT_SOURCE_EXISTS"),
        platform=(400, "ERR_NGROK_5127", r"event type for each source must be unique"),
    )
    vault = _vault(pair)
    name = pair.plain.get(f"/vaults/{vault}").json()["name"]
    pair.expect(
        "POST",
        "/vaults",
        json={"name": name},
        tunnelgw=(409, "ERR_VAULT_NAME_TAKEN"),
        platform=(400, "ERR_NGROK_23004", r"^Vault names must be unique within an account\.$"),
    )
    secret = {"vault_id": vault, "name": "token", "value": "s3cret"}
    assert pair.plain.post("/vault_secrets", json=secret).status_code == 201
    pair.expect(
        "POST",
        "/vault_secrets",
        json=secret,
        tunnelgw=(409, "ERR_SECRET_NAME_TAKEN"),
        platform=(400, "ERR_NGROK_24005", r"^Secret names must be unique within a vault\.$"),
    )
    pair.expect(
        "DELETE",
        f"/vaults/{vault}",
        tunnelgw=(409, "ERR_VAULT_NOT_EMPTY"),
        platform=(400, "ERR_NGROK_23003", r"A Vault must be empty before it can be deleted"),
    )


def test_ssh_ca_in_use(pair: Pair) -> None:
    ca = pair.plain.post("/ssh_certificate_authorities", json={}).json()["id"]
    signed = pair.plain.post(
        "/ssh_user_certificates",
        json={"ssh_certificate_authority_id": ca, "public_key": _ssh_key(), "principals": ["a"]},
    )
    assert signed.status_code == 201, signed.text
    pair.expect(
        "DELETE",
        f"/ssh_certificate_authorities/{ca}",
        tunnelgw=(409, "ERR_SSH_CA_IN_USE"),
        platform=(400, "ERR_NGROK_1964", rf"Can't delete SSH CA '{ca}' because an SSH certificate"),
    )


def test_quota(quota_pair: Pair) -> None:
    """The quota app allows 2 IP policies (the plain app the default)."""
    pair = quota_pair
    for _ in range(2):
        assert pair.profiled.post("/ip_policies", json={}).status_code == 201
    body = pair.platform(
        "POST",
        "/ip_policies",
        (400, "ERR_NGROK_1410", r"^Your account is limited to a maximum of 2 IP Policies$"),
        "ERR_QUOTA_EXCEEDED",
        json={},
    )
    assert body["details"]["kind"] == "ip_policy"


# Invalid values of a family.


def test_cidrs_and_acls(pair: Pair) -> None:
    policy = pair.plain.post("/ip_policies", json={}).json()["id"]
    pair.expect(
        "POST",
        "/ip_policy_rules",
        json={"ip_policy_id": policy, "cidr": "10.0.0.0/33", "action": "allow"},
        tunnelgw=(400, "ERR_INVALID_CIDR"),
        platform=(400, "ERR_NGROK_1406", r"^Invalid CIDR: '10\.0\.0\.0/33'$"),
    )
    pair.expect(
        "POST",
        "/credentials",
        json={"acl": ["bond:x.example.com"]},
        tunnelgw=(400, "ERR_INVALID_ACL_RULE"),
        platform=(400, "ERR_NGROK_600", r"You specified: 'bond:x\.example\.com'\.$"),
    )


def test_event_targets(pair: Pair) -> None:
    pair.expect(
        "POST",
        "/event_destinations",
        json={"target": {}},
        tunnelgw=(400, "ERR_INVALID_EVENT_TARGET"),
        platform=(400, "ERR_NGROK_5100", r"must specify a destination target"),
    )
    pair.expect(
        "POST",
        "/event_destinations",
        json={"target": {"datadog": {"api_key": "k"}, "azure_logs_ingestion": _azure()}},
        tunnelgw=(400, "ERR_INVALID_EVENT_TARGET"),
        platform=(400, "ERR_NGROK_5115", r"may not specify more than one destination target"),
    )
    firehose = {"delivery_stream_arn": "arn:aws:firehose:us-east-1:123456789012:deliverystream/s"}
    role = {"role": {"role_arn": "arn:aws:iam::123456789012:role/events"}}
    creds = {"creds": {"aws_access_key_id": "AKIAIOSFODNN7EXAMPLE", "aws_secret_access_key": "x"}}
    pair.expect(
        "POST",
        "/event_destinations",
        json={"target": {"firehose": {**firehose, "auth": {**role, **creds}}}},
        tunnelgw=(400, "ERR_INVALID_AWS_AUTH"),
        platform=(400, "ERR_NGROK_5116", r"more than one type of authentication"),
    )
    pair.expect(
        "POST",
        "/event_destinations",
        json={"target": {"firehose": {**firehose, "auth": {}}}},
        tunnelgw=(400, "ERR_INVALID_AWS_AUTH"),
        platform=(400, "ERR_NGROK_5107", r"auth is missing a role or credentials"),
    )


def test_certificates(pair: Pair) -> None:
    upload = tls_upload()
    other = tls_upload()
    pair.expect(
        "POST",
        "/tls_certificates",
        json={"certificate_pem": "not pem", "private_key_pem": upload.key_pem},
        tunnelgw=(400, "ERR_INVALID_PEM"),
        platform=(400, "ERR_NGROK_1900", r"certificate is in an unknown or unsupported format"),
    )
    pair.expect(
        "POST",
        "/tls_certificates",
        json={"certificate_pem": upload.chain_pem, "private_key_pem": other.key_pem},
        tunnelgw=(400, "ERR_PRIVATE_KEY_MISMATCH"),
        platform=(400, "ERR_NGROK_1923", r"certificate and private key do not match"),
    )
    pair.expect(
        "POST",
        "/tls_certificates",
        json={"certificate_pem": upload.chain_pem, "private_key_pem": "nope"},
        tunnelgw=(400, "ERR_INVALID_PEM"),
        platform=(400, "ERR_NGROK_1903", r"private key is in an unknown or unsupported format"),
    )
    pair.expect(
        "POST",
        "/certificate_authorities",
        json={"ca_pem": upload.leaf.public_bytes(serialization.Encoding.PEM).decode()},
        tunnelgw=(400, "ERR_NOT_A_CA"),
        platform=(400, "ERR_NGROK_1913", r"did not mark it as a certificate authority"),
    )


def test_cloud_endpoint_rules(pair: Pair) -> None:
    def cloud(url: str, **fields: Any) -> dict[str, Any]:
        return {"url": url, "type": "cloud", "traffic_policy": POLICY, **fields}

    pair.expect(
        "POST",
        "/endpoints",
        json=cloud("ftp://x.example.com"),
        tunnelgw=(400, "ERR_ENDPOINT_URL_INVALID"),
        platform=(400, "ERR_NGROK_18001", r"configuration is invalid: url is invalid\."),
    )
    pair.expect(
        "POST",
        "/endpoints",
        json=cloud("tcp://x.example.com"),
        tunnelgw=(400, "ERR_ENDPOINT_PORT_INVALID"),
        platform=(400, "ERR_NGROK_18003", r"port is invalid or missing"),
    )
    pair.expect(
        "POST",
        "/endpoints",
        json=cloud("https://api.example.com", bindings=["internal"]),
        tunnelgw=(400, "ERR_ENDPOINT_INTERNAL_HOST_REQUIRED"),
        platform=(400, "ERR_NGROK_9029", r"'https://api\.example\.com'.*ends in \"\.internal\""),
    )
    pair.expect(
        "POST",
        "/endpoints",
        json=cloud(f"https://{_name()}.example.org"),
        tunnelgw=(400, "ERR_ENDPOINT_DOMAIN_NOT_RESERVED"),
        platform=(400, "ERR_NGROK_18006", r"does not have any domains or addresses reserved"),
    )
    pair.expect(
        "POST",
        "/endpoints",
        json=cloud("tcp://1.tcp.tunnelgw.test:12345", traffic_policy=TCP_POLICY),
        tunnelgw=(400, "ERR_ENDPOINT_ADDR_NOT_RESERVED"),
        platform=(400, "ERR_NGROK_18006", r"does not have any domains or addresses reserved"),
    )
    pair.expect(
        "POST",
        "/endpoints",
        json=cloud(f"https://{_name()}.{SHARED}", traffic_policy="on_http_request: 5"),
        tunnelgw=(400, "ERR_INVALID_TRAFFIC_POLICY"),
        platform=(400, "ERR_NGROK_18002", r"traffic policy configuration is invalid: "),
    )
    url = f"https://{_name()}.{SHARED}"
    first = pair.plain.post("/endpoints", json=cloud(url)).json()["id"]
    pair.expect(
        "POST",
        "/endpoints",
        json=cloud(url),
        tunnelgw=(409, "ERR_ENDPOINT_URL_IN_USE"),
        platform=(400, "ERR_NGROK_18017", r"pooling was set to disabled"),
    )
    pair.expect(
        "POST",
        "/endpoints",
        json=cloud(url, pooling_enabled=True),
        tunnelgw=(409, "ERR_ENDPOINT_URL_IN_USE"),
        platform=(400, "ERR_NGROK_18016", r"pooling was set to enabled"),
    )
    pair.expect(
        "PATCH",
        f"/endpoints/{first}",
        json={"url": f"http://{url.removeprefix('https://')}"},
        tunnelgw=(400, "ERR_ENDPOINT_SCHEME_CHANGE"),
        platform=(400, "ERR_NGROK_18005", r"not allowed to change the protocol/URL scheme"),
    )


def test_rate_limit_injected(pair: Pair) -> None:
    rule = {"operation": "api_keys.list", "status": 429}
    assert pair.plain.post("/_admin/faults", json=rule).status_code == 201
    try:
        pair.platform("GET", "/api_keys", (429, "ERR_NGROK_226", r"."), "ERR_RATE_LIMITED")
    finally:
        assert pair.plain.delete("/_admin/faults").status_code == 204


@pytest.mark.parametrize(
    ("path", "body", "code", "msg"),
    [
        ("/reserved_domains", None, "ERR_NGROK_431", r"limited to 1 reserved domains"),
        ("/reserved_addrs", {}, "ERR_NGROK_502", r"limited to 1 reserved addresses"),
        ("/api_keys", {}, "ERR_NGROK_613", r"limited to 1 API keys"),
        ("/credentials", {}, "ERR_NGROK_615", r"limited to 1 authtokens"),
        ("/vaults", None, "ERR_NGROK_23005", r"maximum number of vaults \(1\)"),
        ("/event_destinations", {"target": {"datadog": {"api_key": "k"}}}, "ERR_NGROK_5102",
         r"maximum of 1 destinations"),
        ("/event_subscriptions", {}, "ERR_NGROK_5131", r"maximum of 1 event subscriptions"),
        ("/endpoints", None, "ERR_NGROK_18010", r"maximum number of cloud endpoints"),
    ],
)  # fmt: skip
def test_quotas_of_families(
    quota_pair: Pair, path: str, body: dict[str, Any] | None, code: str, msg: str
) -> None:
    """The quota app allows one row of these kinds: the account's first (made on the plain
    app) fills it."""
    pair = quota_pair
    url = f"https://{_name()}.{SHARED}"
    bodies = {
        "/reserved_domains": lambda: {"domain": f"{_name()}.example.com"},
        "/vaults": lambda: {"name": _name("vault")},
        "/endpoints": lambda: {"url": url, "type": "cloud", "traffic_policy": POLICY,
                               "pooling_enabled": True},
    }  # fmt: skip
    make = bodies.get(path, lambda: body)
    if path != "/api_keys":  # the account's admin key is its first
        assert pair.plain.post(path, json=make()).status_code == 201
    pair.platform("POST", path, (400, code, msg), "ERR_QUOTA_EXCEEDED", json=make())


def test_kubernetes_operators(pair: Pair) -> None:
    from tests.api.test_kubernetes_operators import registration

    pair.expect(
        "POST",
        "/kubernetes_operators",
        json=registration(enabled_features=["ingress"]),
        tunnelgw=(400, "ERR_BINDING_NOT_ALLOWED"),
        platform=(400, "ERR_NGROK_19002", r"^Failed to validate Kubernetes Operator! Reason: "),
    )
    bad_csr = "-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n-----END CERTIFICATE REQUEST-----\n"
    pair.expect(
        "POST",
        "/kubernetes_operators",
        json=registration(csr=bad_csr),
        tunnelgw=(400, "ERR_INVALID_CSR"),
        platform=(400, "ERR_NGROK_19001", r"^Certificate Signing Requests Failed! Reason: "),
    )
    selectors = registration()
    selectors["binding"]["endpoint_selectors"] = ["obj.nope =="]
    pair.expect(
        "POST",
        "/kubernetes_operators",
        json=selectors,
        tunnelgw=(400, "ERR_INVALID_ENDPOINT_SELECTOR"),
        platform=(400, "ERR_NGROK_19003", r"^Failed to validate endpoint selectors! Reason: "),
    )


def test_agent_command_refused(pair: Pair) -> None:
    from tests.api.test_tunnel_sessions import _credential, _started

    token = _credential(pair.plain)["token"]
    session = _started(pair.plain, token, os="windows")["tunnel_session"]["id"]
    pair.expect(
        "POST",
        f"/tunnel_sessions/{session}/restart",
        json={},
        tunnelgw=(409, "ERR_AGENT_COMMAND_REFUSED"),
        platform=(400, "ERR_NGROK_804", r"does not support remote restarting: "),
    )


def test_agent_connect_refusals(pair: Pair) -> None:
    from tests.api.test_tunnel_sessions import AGENTS, _credential

    def connect(token: str, *endpoints: dict[str, Any]) -> dict[str, Any]:
        return {"json": {"authtoken": token, "endpoints": list(endpoints)}}

    wrong = "tgwcr_" + "x" * 40
    body = pair.expect(
        "POST",
        AGENTS,
        **connect(wrong, {"url": f"https://x.{SHARED}"}),
        tunnelgw=(403, "ERR_AGENT_AUTH_FAILED"),
        platform=(403, "ERR_NGROK_107", r"Your authtoken: 'tgwcr_xx\.\.\.'$"),
    )
    assert wrong not in body["msg"]
    zone = f"{_name('zone')}.example.com"
    assert pair.plain.post("/reserved_domains", json={"domain": f"api.{zone}"}).status_code == 201
    credential = _credential(pair.plain, acl=[f"bind:app.{zone}", "bind:env=prod"])
    token, credential_id = credential["token"], credential["id"]
    pair.expect(
        "POST",
        AGENTS,
        **connect(token, {"url": f"https://api.{zone}"}),
        tunnelgw=(403, "ERR_AGENT_BIND_DENIED"),
        platform=(
            403,
            "ERR_NGROK_316",
            rf"binding this name\. Credential ID: '{credential_id}' Name: 'api\.{zone}'$",
        ),
    )
    pair.expect(
        "POST",
        AGENTS,
        **connect(token, {"labels": {"env": "dev"}}),
        tunnelgw=(403, "ERR_AGENT_BIND_DENIED"),
        platform=(403, "ERR_NGROK_399", r"binding this label\. .* Label: 'env=dev'$"),
    )
    address = pair.plain.post("/reserved_addrs", json={}).json()["addr"]
    pair.expect(
        "POST",
        AGENTS,
        **connect(token, {"url": f"tcp://{address}", "traffic_policy": TCP_POLICY}),
        tunnelgw=(403, "ERR_AGENT_BIND_DENIED"),
        platform=(403, "ERR_NGROK_308", rf"binding this address\. .* Address: '{address}'$"),
    )


def test_admin_only(pair: Pair, factory: Factory) -> None:
    member = factory.principal(pair.plain.creds.account_id)
    as_member = Pair(member, ApiClient(pair.profiled.http, pair.profiled.validator, member.token))
    for path in ("/bot_users", "/service_users"):
        as_member.expect(
            "POST",
            path,
            json={"name": "ci"},
            tunnelgw=(403, "ERR_PERMISSION_DENIED"),
            platform=(403, "ERR_NGROK_4111", r"^You must be an admin to create, update, or delete"),
        )


def test_access_token_scopes(pair: Pair) -> None:
    from tests.api.test_tunnel_sessions import AGENTS

    reader = pair.plain.post("/access_tokens", json={"scopes": ["domains:read"]}).json()
    as_reader = Pair(
        pair.plain, ApiClient(pair.profiled.http, pair.profiled.validator, reader["token"])
    )
    as_reader.plain = Session(  # the same token on the plain app
        ApiClient(pair.plain.client.http, pair.plain.client.validator, reader["token"]),
        pair.plain.creds,
    )
    as_reader.expect(
        "POST",
        "/reserved_domains",
        json={"domain": f"{_name()}.example.com"},
        tunnelgw=(403, "ERR_SCOPE_REQUIRED"),
        platform=(
            403,
            "ERR_NGROK_29001",
            r"^You don't have permission to perform this action\. Your credentials are missing "
            r"the 'domains:write' scope\.$",
        ),
    )
    pair.expect(
        "POST",
        AGENTS,
        json={"authtoken": reader["token"], "endpoints": []},
        tunnelgw=(403, "ERR_SCOPE_REQUIRED"),
        platform=(
            403,
            "ERR_NGROK_15014",
            rf"^The credential '{reader['id']}' does not have the 'tunnel:start' scope",
        ),
    )


def test_secret_fields(pair: Pair) -> None:
    pair.expect(
        "POST",
        "/vault_secrets",
        json={"name": "a", "value": "b"},
        tunnelgw=(400, "ERR_MISSING_FIELD"),
        platform=(400, "ERR_NGROK_24008", r"^Required parameter 'VaultID' is missing\.$"),
    )
    pair.expect(
        "POST",
        "/vault_secrets",
        json={"vault_id": _vault(pair), "name": "a", "value": "v" * 40000},
        tunnelgw=(400, "ERR_FIELD_TOO_LONG"),
        platform=(400, "ERR_NGROK_24004", r"secret value must be less than 32768 bytes"),
    )


def test_ip_restricted(pair: Pair) -> None:
    policy = pair.plain.post("/ip_policies", json={}).json()["id"]
    rule = {"ip_policy_id": policy, "cidr": "10.0.0.0/8", "action": "allow"}
    assert pair.plain.post("/ip_policy_rules", json=rule).status_code == 201
    restriction = {"type": "api", "ip_policy_ids": [policy], "enforced": True}
    assert pair.plain.post("/ip_restrictions", json=restriction).status_code == 201
    try:
        pair.expect(
            "GET",
            "/api_keys",
            tunnelgw=(403, "ERR_IP_RESTRICTED"),
            platform=(403, "ERR_NGROK_220", r"Your IP does not match the IP Policy"),
        )
    finally:  # the admin API is exempt from `api` restrictions
        assert pair.plain.post("/_admin/reset", json={}).status_code in (200, 204)


def test_every_mapped_code_is_exercised() -> None:
    """Runs last: every platform code of the catalog was answered by a test above."""
    missing = set(platform_errors.error_codes()) - SEEN
    assert not missing, sorted(missing)


def _vault(pair: Pair) -> str:
    made = pair.plain.post("/vaults", json={"name": _name("vault")})
    assert made.status_code == 201, made.text
    vault: str = made.json()["id"]
    return vault


def _ssh_key() -> str:
    return (
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl "
        "test@example"
    )


def _azure() -> dict[str, Any]:
    return {
        "tenant_id": "72f988bf-86f1-41af-91ab-2d7cd011db47",
        "client_id": "0b8f5c1e-5a3d-4f7e-9c1a-1d2e3f4a5b6c",
        "client_secret": "s",
        "logs_ingestion_uri": "https://x.ingest.monitor.azure.com",
        "data_collection_rule_id": "dcr-00000000000000000000000000000000",
        "data_collection_stream_name": "Custom-Events",
    }
