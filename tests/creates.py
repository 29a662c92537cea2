"""The API's create operations of account resources, for tests that go over all of them: the
collection path, the quota kind it counts, and a maker of a new valid body."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.factories import ssh_keygen, tls_upload, x509_certificate


@dataclass(frozen=True)
class Create:
    path: str  # the collection; its items are at `path/{id}`
    kind: str  # the quota kind (tunnelgw.models.QUOTA_KINDS)
    # A new valid body, made for a client (a factories.Session) with a temporary directory.
    make: Callable[[Any, Path], dict[str, Any]]

    def post(self, client: Any, tmp_path: Path, **fields: Any) -> Any:
        """POST a new valid body, with `fields` set over it."""
        return client.post(self.path, json={**self.make(client, tmp_path), **fields})


def _unique(prefix: str) -> str:
    return f"{prefix}{uuid.uuid4().hex[:12]}"


_SSH_CAS: dict[str, str] = {}  # account id -> the SSH CA that signs its certificates here


def _ssh_certificate(client: Any, tmp_path: Path) -> dict[str, Any]:
    ca = _SSH_CAS.get(client.creds.account_id)
    if ca is None:
        made = client.post("/ssh_certificate_authorities", json={"private_key_type": "ed25519"})
        ca = _SSH_CAS[client.creds.account_id] = made.json()["id"]
    return {"ssh_certificate_authority_id": ca, "public_key": ssh_keygen(tmp_path, "ed25519")}


_IP_POLICIES: dict[str, str] = {}  # account id -> the IP policy its rules and restrictions use


def _ip_policy(client: Any) -> str:
    policy = _IP_POLICIES.get(client.creds.account_id)
    if policy is None:
        made = client.post("/ip_policies", json={})
        policy = _IP_POLICIES[client.creds.account_id] = made.json()["id"]
    return policy


_VAULTS: dict[str, str] = {}  # account id -> the vault its secrets go to here


def _vault_secret(client: Any, _tmp_path: Path) -> dict[str, Any]:
    vault = _VAULTS.get(client.creds.account_id)
    if vault is None:
        made = client.post("/vaults", json={"name": _unique("secrets-")})
        vault = _VAULTS[client.creds.account_id] = made.json()["id"]
    return {"vault_id": vault, "name": _unique("s-"), "value": "s3cr3t"}


def _tls_certificate(_client: Any, _tmp_path: Path) -> dict[str, Any]:
    upload = tls_upload()
    return {"certificate_pem": upload.chain_pem, "private_key_pem": upload.key_pem}


def _kubernetes_operator(_client: Any, _tmp_path: Path) -> dict[str, Any]:
    """A registration with a binding, so the CSR is signed on each create."""
    from tests.api.test_kubernetes_operators import registration

    return registration()


CREATES: dict[str, Create] = {
    "access_tokens.create": Create(
        "/access_tokens", "access_token", lambda c, t: {"scopes": ["tunnels:read"]}
    ),
    "api_keys.create": Create("/api_keys", "api_key", lambda c, t: {}),
    "http_response_backends.create": Create(
        "/backends/http_response", "http_response_backend", lambda c, t: {}
    ),
    "certificate_authorities.create": Create(
        "/certificate_authorities",
        "certificate_authority",
        lambda c, t: {"ca_pem": x509_certificate()},
    ),
    "ssh_certificate_authorities.create": Create(
        "/ssh_certificate_authorities",
        "ssh_certificate_authority",
        lambda c, t: {"private_key_type": "ed25519"},
    ),
    "ssh_user_certificates.create": Create(
        "/ssh_user_certificates", "ssh_user_certificate", _ssh_certificate
    ),
    "reserved_domains.create": Create(
        "/reserved_domains", "reserved_domain", lambda c, t: {"name": _unique("quota-")}
    ),
    "agent_ingresses.create": Create(
        "/agent_ingresses",
        "agent_ingress",
        lambda c, t: {"domain": f"{_unique('q')}.example.com"},
    ),
    "tls_certificates.create": Create("/tls_certificates", "tls_certificate", _tls_certificate),
    "event_subscriptions.create": Create(
        "/event_subscriptions", "event_subscription", lambda c, t: {}
    ),
    "tunnel_group_backends.create": Create(
        "/backends/tunnel_group", "tunnel_group_backend", lambda c, t: {}
    ),
    "reserved_addrs.create": Create("/reserved_addrs", "reserved_addr", lambda c, t: {}),
    "tls_edges.create": Create("/edges/tls", "edge", lambda c, t: {}),
    "ip_policies.create": Create("/ip_policies", "ip_policy", lambda c, t: {}),
    "ip_policy_rules.create": Create(
        "/ip_policy_rules",
        "ip_policy_rule",
        lambda c, t: {"ip_policy_id": _ip_policy(c), "cidr": "10.0.0.0/8", "action": "allow"},
    ),
    "ip_restrictions.create": Create(
        "/ip_restrictions",
        "ip_restriction",
        lambda c, t: {"type": "dashboard", "ip_policy_ids": [_ip_policy(c)]},
    ),
    # Bot users and service users are principals, as the account's users are (one kind).
    "service_users.create": Create("/service_users", "principal", lambda c, t: {"name": "svc"}),
    "bot_users.create": Create("/bot_users", "principal", lambda c, t: {"name": "bot"}),
    "credentials.create": Create(
        "/credentials", "credential", lambda c, t: {"acl": ["bind:*.example.com"]}
    ),
    "ssh_credentials.create": Create(
        "/ssh_credentials",
        "ssh_credential",
        lambda c, t: {"public_key": ssh_keygen(t, "ed25519")},
    ),
    "kubernetes_operators.create": Create(
        "/kubernetes_operators", "kubernetes_operator", _kubernetes_operator
    ),
    # Cloud endpoints: an internal URL needs no reserved domain.
    "endpoints.create": Create(
        "/endpoints",
        "endpoint",
        lambda c, t: {
            "url": f"https://{_unique('q')}.internal",
            "type": "cloud",
            "traffic_policy": "on_http_request:\n  - actions:\n      - type: deny\n",
        },
    ),
    "event_destinations.create": Create(
        "/event_destinations",
        "event_destination",
        lambda c, t: {"target": {"datadog": {"api_key": _unique("dd-")}}},
    ),
    "ssh_host_certificates.create": Create(
        "/ssh_host_certificates", "ssh_host_certificate", _ssh_certificate
    ),
    "abuse_reports.create": Create(
        "/abuse_reports", "abuse_report", lambda c, t: {"urls": ["https://a.example/x"]}
    ),
    "vaults.create": Create("/vaults", "vault", lambda c, t: {"name": _unique("v-")}),
    "vault_secrets.create": Create("/vault_secrets", "vault_secret", _vault_secret),
    "ai_gateway_api_keys.create": Create(
        "/ai_gateway_api_keys", "ai_gateway_api_key", lambda c, t: {"description": "assistant"}
    ),
}
