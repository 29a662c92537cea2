"""Rows the API cannot create (read-only resources), and rows some operations need before
the API has made any (a subscription with event sources, a TLS edge and a tunnel group
backend for the backend module, an IP policy and IP restrictions using it, an event
destination for subscriptions to name, a vault for the secret creates, cloud endpoints to
update and delete, tunnel sessions for the session commands), seeded into the
contract account, and the Schemathesis config that points operations at them.

Without them those operations only ever answer 404, which raises the missing-test-data
warning, and warnings fail the run. Each `{id}` operation gets a row of its own (a delete
must not take the row a get needs); the event-source operations get a subscription that
already has a third of the catalog, so gets, updates and creates all find something to do.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import delete
from sqlmodel import col

from tunnelgw.core import ids
from tunnelgw.core.spec import load as load_spec
from tunnelgw.models import (
    ApplicationSession,
    ApplicationUser,
    Credential,
    Edge,
    EdgeRoute,
    Endpoint,
    EndpointConfiguration,
    EventDestination,
    EventSource,
    EventSubscription,
    EventSubscriptionDestination,
    IpPolicy,
    IpRestriction,
    IpRestrictionPolicy,
    Tunnel,
    TunnelGroupBackend,
    TunnelSession,
    Vault,
)
from tunnelgw.services import auth
from tunnelgw.storage.unit import Unit

# Operation selector (a Schemathesis `include-*` key and value) -> fixed parameters
# (`path.<name>`, `body.<field>`; a list for an array field).
Entries = list[tuple[tuple[str, str], dict[str, str | list[str]]]]

_SPEC = load_spec()
# The seeded vault's name (tests/contract/hooks.py names it where a case names no vault).
VAULT_NAME = "contract-vault"
SEEDED_TYPES = [
    type_ for type_ in _SPEC["components"]["schemas"]["EventType"]["enum"] if "_created." in type_
]


def _endpoint(account_id: str, tunnel: Tunnel) -> Endpoint:
    return Endpoint.new(
        id=ids.new_id(Endpoint.PREFIX),
        account_id=account_id,
        proto="https",
        hostport="app.example.com:443",
        public_url="https://app.example.com",
        type="ephemeral",
        tunnel_id=tunnel.id,
    )


def _cloud_endpoint(account_id: str) -> Endpoint:
    """A cloud endpoint (internal: it needs no reserved domain) for an update or a delete."""
    host = f"seeded-{ids.new_secret(8).lower()}.internal"
    return Endpoint.new(
        id=ids.new_id(Endpoint.PREFIX),
        account_id=account_id,
        proto="https",
        hostport=f"{host}:443",
        public_url=f"https://{host}",
        type="cloud",
        bindings=["internal"],
        traffic_policy="on_http_request:\n  - actions:\n      - type: deny\n",
    )


def _user_with_session(
    account_id: str, endpoint: Endpoint
) -> tuple[ApplicationUser, ApplicationSession]:
    user = ApplicationUser.new(id=ids.new_id(ApplicationUser.PREFIX), account_id=account_id)
    session = ApplicationSession.new(
        id=ids.new_id(ApplicationSession.PREFIX),
        account_id=account_id,
        application_user_id=user.id,
        endpoint_id=endpoint.id,
        expires_at=datetime.now(UTC) + timedelta(days=1),
        browser_session={"ip_address": "203.0.113.7"},
    )
    return user, session


def _read_only(account_id: str) -> dict[str, Any]:
    """One row of each resource the API reads but cannot create, for the get operations."""
    https = Edge.new(id=ids.new_id("edghts"), account_id=account_id, kind="https")
    return {
        "tunnel": Tunnel.new(id=ids.new_id(Tunnel.PREFIX), account_id=account_id),
        "https_edge": https,
        "tcp_edge": Edge.new(id=ids.new_id("edgtcp"), account_id=account_id, kind="tcp"),
        "route": EdgeRoute.new(
            id=ids.new_id(EdgeRoute.PREFIX), account_id=account_id, edge_id=https.id
        ),
        "endpoint_configuration": EndpointConfiguration.new(
            id=ids.new_id(EndpointConfiguration.PREFIX), account_id=account_id
        ),
    }


# The authtoken of the contract account's tunnel credential (no ACL rules), for the admin
# API's agent connects: a generated one is never a credential's.
AGENT_TOKEN = "tgwcr_contract-agent-" + "x" * 22


async def seed(session: Unit, account_id: str, admin_id: str) -> Entries:
    """Insert the rows; which operations must use which of them."""
    # One database can hold an earlier run's contract account (the PostgreSQL suite runs both
    # contract tests on one database): its credential holds the same token, unique across
    # accounts, unless that run happened to delete it.
    await session.exec(
        delete(Credential).where(col(Credential.token_hash) == auth.hash_token(AGENT_TOKEN))
    )
    read_only = _read_only(account_id)
    endpoint = _endpoint(account_id, read_only["tunnel"])
    users = [_user_with_session(account_id, endpoint) for _ in range(4)]
    subscription = EventSubscription.new(
        id=ids.new_id(EventSubscription.PREFIX), account_id=account_id
    )
    edge = Edge.new(id=ids.new_id("edgtls"), account_id=account_id, kind="tls")
    backend = TunnelGroupBackend.new(
        id=ids.new_id(TunnelGroupBackend.PREFIX), account_id=account_id
    )
    # An IP policy for the restriction operations: a create names existing policies, which
    # random ids never are; and a restriction (of the dashboard) for each `{id}` operation.
    policy = IpPolicy.new(id=ids.new_id(IpPolicy.PREFIX), account_id=account_id)
    restrictions = [
        IpRestriction.new(
            id=ids.new_id(IpRestriction.PREFIX), account_id=account_id, type="dashboard"
        )
        for _ in range(3)
    ]
    # An event destination for the subscription operations to name (random ids never are
    # one), kept in use by the sources' subscription so no inferred DELETE takes it away.
    destination = EventDestination.new(
        id=ids.new_id(EventDestination.PREFIX),
        account_id=account_id,
        target={
            "kinesis": {
                "stream_arn": "arn:aws:kinesis:us-east-1:123456789012:stream/contract",
                "auth": {"role": {"role_arn": "arn:aws:iam::123456789012:role/contract"}},
            }
        },
    )
    clouds = [_cloud_endpoint(account_id) for _ in range(2)]
    rows = [*read_only.values(), endpoint, *clouds, *(row for pair in users for row in pair)]
    # A vault for the secret creates (a random `vault_id` never names one), made by the
    # account's admin.
    vault = Vault.new(
        id=ids.new_id(Vault.PREFIX),
        account_id=account_id,
        name=VAULT_NAME,
        created_by=admin_id,
        last_updated_by=admin_id,
    )
    # A tunnel session for each command (stop and restart end theirs; update needs a version
    # with a newer one of its major version).
    credential = Credential.new(
        id=ids.new_id(Credential.PREFIX),
        account_id=account_id,
        owner_id=admin_id,
        token_hash=auth.hash_token(AGENT_TOKEN),
    )
    agents = {
        name: TunnelSession.new(
            id=ids.new_id(TunnelSession.PREFIX),
            account_id=account_id,
            agent_version="3.1.0",
            os="linux",
            ip="203.0.113.7",
            credential_id=credential.id,
        )
        for name in ("get", "stop", "restart", "update")
    }
    session.add_all([*rows, subscription, edge, backend, policy, *restrictions, destination, vault])
    session.add_all([credential, *agents.values()])
    await session.flush()
    session.add_all(
        IpRestrictionPolicy.new(
            restriction_id=restriction.id,
            position=0,
            ip_policy_id=policy.id,
            account_id=account_id,
        )
        for restriction in restrictions
    )
    session.add_all(
        EventSource.new(subscription_id=subscription.id, type=type_, account_id=account_id)
        for type_ in SEEDED_TYPES
    )
    session.add(
        EventSubscriptionDestination.new(
            subscription_id=subscription.id, destination_id=destination.id, account_id=account_id
        )
    )
    route = read_only["route"]
    return [
        (("include-operation-id", "endpoints.get"), {"path.id": endpoint.id}),
        (("include-operation-id", "endpoints.update"), {"path.id": clouds[0].id}),
        (("include-operation-id", "endpoints.delete"), {"path.id": clouds[1].id}),
        (("include-operation-id", "application_users.get"), {"path.id": users[0][0].id}),
        (("include-operation-id", "application_users.delete"), {"path.id": users[1][0].id}),
        (("include-operation-id", "application_sessions.get"), {"path.id": users[2][1].id}),
        (("include-operation-id", "application_sessions.delete"), {"path.id": users[3][1].id}),
        (("include-operation-id", "tunnels.get"), {"path.id": read_only["tunnel"].id}),
        *(
            (("include-operation-id", f"tunnel_sessions.{name}"), {"path.id": agent.id})
            for name, agent in agents.items()
        ),
        (("include-operation-id", "https_edges.get"), {"path.id": read_only["https_edge"].id}),
        (("include-operation-id", "tcp_edges.get"), {"path.id": read_only["tcp_edge"].id}),
        (
            ("include-operation-id", "https_edge_routes.get"),
            {"path.edge_id": route.edge_id, "path.id": route.id},
        ),
        (
            ("include-operation-id", "endpoint_configurations.get"),
            {"path.id": read_only["endpoint_configuration"].id},
        ),
        (("include-operation-id", "vault_secrets.create"), {"body.vault_id": vault.id}),
        # An AI gateway API key names an endpoint of the account (a random id never is one):
        # the seeded agent endpoint, which no operation can delete.
        (("include-operation-id", "ai_gateway_api_keys.create"), {"body.endpoint_id": endpoint.id}),
        (("include-operation-id", "ai_gateway_api_keys.update"), {"body.endpoint_id": endpoint.id}),
        (
            # The event source operations (not the subscriptions' own, which the API makes).
            ("include-path-regex", "^/event_subscriptions/[{]subscription_id[}]/sources"),
            {"path.subscription_id": subscription.id},
        ),
        (
            ("include-path", "/edges/tls/{id}/backend"),
            {"path.id": edge.id, "body.backend_id": backend.id},
        ),
        (("include-operation-id", "ip_restrictions.create"), {"body.ip_policy_ids": [policy.id]}),
        (("include-operation-id", "ip_policy_rules.create"), {"body.ip_policy_id": policy.id}),
        (("include-operation-id", "ip_restrictions.get"), {"path.id": restrictions[0].id}),
        (
            ("include-operation-id", "ip_restrictions.update"),
            {"path.id": restrictions[1].id, "body.ip_policy_ids": [policy.id]},
        ),
        (("include-operation-id", "ip_restrictions.delete"), {"path.id": restrictions[2].id}),
        (
            ("include-operation-id", "event_subscriptions.create"),
            {"body.destination_ids": [destination.id]},
        ),
        (
            ("include-operation-id", "event_subscriptions.update"),
            {"body.destination_ids": [destination.id]},
        ),
    ]


def made_by_the_api(base_url: str, token: str) -> Entries:
    """Rows only the API makes (it generates their key pairs), made through the live server,
    for the operations that need one: an SSH certificate authority for the delete. Without
    it, the delete finds a CA only when a stateful scenario creates one first; a run that a
    busy machine left ~15 s for the stateful phase did not, and its missing-test-data
    warning failed the run."""
    headers = {"Authorization": f"Bearer {token}", "Service-Version": "2"}
    made = httpx.post(
        f"{base_url}/ssh_certificate_authorities",
        json={"description": "contract: for the delete", "private_key_type": "ed25519"},
        headers=headers,
        timeout=30,
    )
    made.raise_for_status()
    return [
        (
            ("include-operation-id", "ssh_certificate_authorities.delete"),
            {"path.id": made.json()["id"]},
        )
    ]


def config(base: Path, target: Path, entries: Entries) -> Path:
    """`base` plus an `[[operations]]` table per entry; written to `target`."""
    text = base.read_text()
    for (key, value), params in entries:
        fixed = ", ".join(f'"{name}" = {_toml(v)}' for name, v in params.items())
        text += f"\n[[operations]]\n{key} = {_toml(value)}\nparameters = {{ {fixed} }}\n"
    target.write_text(text)
    return target


def _toml(value: Any) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(_toml(item) for item in value) + "]"
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'
