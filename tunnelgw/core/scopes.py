"""Access token scopes: the one table of what each API operation needs.

An access token (`/access_tokens`) acts as its owner and can do only what its scopes allow;
an API key keeps full access. Every operationId of openapi.yaml that takes a credential is a
key of `REQUIRED` (tests/unit/test_scopes.py fails when one is missing, or names a scope
`SCOPES` does not hold), so a new operation cannot forget its scope.

The scope names are the platform's: `<family>:read` for the reads of a family, `<family>:write`
for its creates, updates and deletes, and a few of their own (`tunnel:start` for agents,
`tunnel-sessions:manage` for the session commands). The platform's authorization server lists
most of them (docs/behaviour.md, Access tokens, says which are documented there and which are
named here after the same pattern for families it does not list).
"""

from __future__ import annotations

import re
from typing import Final

# A scope the admin API's operations carry: not a scope a token can hold. Access tokens are
# refused there; the admin API serves a test suite's own setup, with its API key.
ADMIN_ONLY: Final = "admin"

# The scope an agent needs to connect with an access token as its authtoken.
TUNNEL_START: Final = "tunnel:start"

# Each family's scope prefix: the platform's name for the family's scopes.
_FAMILIES: dict[str, tuple[str, ...]] = {
    "abuse-reports": ("read", "write"),
    "access-tokens": ("read", "write"),
    "agent-ingresses": ("read", "write"),
    "ai-gateway-api-keys": ("read", "write"),
    "api-keys": ("read", "write"),
    "application-sessions": ("read", "write"),
    "application-users": ("read", "write"),
    "backends": ("read", "write"),
    "certificate-authorities": ("read", "write"),
    "credentials": ("read", "write"),
    "edges": ("read", "write"),
    "endpoints": ("read", "write"),
    "events": ("read", "write"),
    "ip-policies": ("read", "write"),
    "ip-restrictions": ("read", "write"),
    "kubernetes-operators": ("read", "write"),
    "domains": ("read", "write"),
    "secrets": ("read", "write"),
    "service-users": ("read", "write"),
    "ssh-certificate-authorities": ("read", "write"),
    "ssh-credentials": ("read", "write"),
    "ssh-host-certificates": ("read", "write"),
    "ssh-user-certificates": ("read", "write"),
    "tcp-addrs": ("read", "write"),
    "tls-certificates": ("read", "write"),
    "tunnel-sessions": ("read", "manage"),
    "tunnels": ("read",),
    "vaults": ("read", "write"),
}

# Scopes the platform's authorization server lists that no operation here needs: a token may
# hold them (a client sending one is not refused), and they allow nothing more here.
_UNUSED = frozenset(
    {
        "agents:manage",
        "agents:read",
        "agents:write",
        "domains:write:certificates",
        "endpoints:admin",
    }
)

# Every scope a token may hold, sorted (the spec's `AccessTokenScope` enum lists the same).
SCOPES: Final[tuple[str, ...]] = tuple(
    sorted(
        {f"{family}:{verb}" for family, verbs in _FAMILIES.items() for verb in verbs}
        | {TUNNEL_START}
        | _UNUSED
    )
)

# The handler module of each operationId (`<module>.<verb>`) and the family of its scopes.
_MODULE_FAMILY: dict[str, str] = {
    "abuse_reports": "abuse-reports",
    "access_tokens": "access-tokens",
    "agent_ingresses": "agent-ingresses",
    "ai_gateway_api_keys": "ai-gateway-api-keys",
    "api_keys": "api-keys",
    "application_sessions": "application-sessions",
    "application_users": "application-users",
    "bot_users": "service-users",
    "certificate_authorities": "certificate-authorities",
    "credentials": "credentials",
    "endpoint_configurations": "endpoints",
    "endpoints": "endpoints",
    "event_destinations": "events",
    "event_sources": "events",
    "event_subscriptions": "events",
    "http_response_backends": "backends",
    "https_edge_routes": "edges",
    "https_edges": "edges",
    "ip_policies": "ip-policies",
    "ip_policy_rules": "ip-policies",
    "ip_restrictions": "ip-restrictions",
    "kubernetes_operators": "kubernetes-operators",
    "reserved_addrs": "tcp-addrs",
    "reserved_domains": "domains",
    "service_users": "service-users",
    "ssh_certificate_authorities": "ssh-certificate-authorities",
    "ssh_credentials": "ssh-credentials",
    "ssh_host_certificates": "ssh-host-certificates",
    "ssh_user_certificates": "ssh-user-certificates",
    "tcp_edges": "edges",
    "tls_certificates": "tls-certificates",
    "tls_edge_backend": "edges",
    "tls_edges": "edges",
    "tunnel_group_backends": "backends",
    "tunnel_sessions": "tunnel-sessions",
    "tunnels": "tunnels",
    "vault_secrets": "secrets",
    "vaults": "vaults",
}
# Verbs that only read; every other verb changes something (`:write`).
_READS = re.compile(r"get|list|get_.*|list_.*")
# Verbs whose scope is not the family's read or write one.
_SPECIAL = {
    "tunnel_sessions.restart": "tunnel-sessions:manage",
    "tunnel_sessions.stop": "tunnel-sessions:manage",
    "tunnel_sessions.update": "tunnel-sessions:manage",
    # A vault's secrets are listed under the vault: reading them is a secrets read.
    "vaults.list_secrets": "secrets:read",
}
_ADMIN_MODULE = "admin"


def _required() -> dict[str, str]:
    table: dict[str, str] = {}
    for module, family in _MODULE_FAMILY.items():
        for verb in _VERBS[module]:
            operation = f"{module}.{verb}"
            kind = "read" if _READS.fullmatch(verb) else "write"
            table[operation] = _SPECIAL.get(operation, f"{family}:{kind}")
    for verb in _ADMIN_VERBS:
        table[f"{_ADMIN_MODULE}.{verb}"] = ADMIN_ONLY
    return table


_CRUD = ("create", "get", "list", "update", "delete")
_VERBS: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(_MODULE_FAMILY, _CRUD),
    "abuse_reports": ("create", "get"),
    "access_tokens": (*_CRUD, "revoke"),
    "application_sessions": ("get", "list", "delete"),
    "application_users": ("get", "list", "delete"),
    "endpoint_configurations": ("get",),
    "https_edge_routes": ("get",),
    "https_edges": ("get", "list"),
    "kubernetes_operators": (*_CRUD, "get_bound_endpoints"),
    "reserved_domains": (
        *_CRUD,
        "detach_certificate",
        "detach_certificate_management_policy",
    ),
    "tcp_edges": ("get", "list"),
    "tls_edge_backend": ("get", "replace", "delete"),
    "tunnel_sessions": ("get", "list", "restart", "stop", "update"),
    "tunnels": ("get", "list"),
    "vaults": (*_CRUD, "list_secrets"),
}
_ADMIN_VERBS = (
    # The operator's account operations take the operator token, never an access token.
    "create_account",
    "list_accounts",
    "delete_account",
    "reset",
    "load_fixtures",
    "get_clock",
    "set_clock",
    "connect_agent",
    "disconnect_agent",
    "list_faults",
    "create_fault",
    "clear_faults",
    "list_requests",
    "clear_requests",
    "count_requests",
    "list_events",
    "count_events",
    "snapshot",
)

# operationId -> the scope an access token needs to call it (`ADMIN_ONLY`: none will do).
REQUIRED: Final[dict[str, str]] = _required()


def required(operation_id: str) -> str | None:
    """The scope `operation_id` needs; None for an operation this table does not know (one
    without a credential check, such as the health probes)."""
    return REQUIRED.get(operation_id)


def unknown(names: list[str]) -> list[str]:
    """The names in `names` that are not scopes."""
    known = set(SCOPES)
    return [name for name in names if name not in known]
