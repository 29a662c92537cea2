"""Access token scopes: what each API operation needs, derived from the spec.

An access token (`/access_tokens`) acts as its owner and can do only what its scopes allow;
an API key keeps full access. Every operationId of openapi.yaml that takes a credential
(`<module>.<verb>`) needs a scope of its module's family: `<family>:read` for a verb that
only reads (`get`, `list`, `get_...`, `list_...`), `<family>:write` for any other, and a few
of their own (`tunnel:start` for agents, `tunnel-sessions:manage` for the session commands).
A module's family is its name with hyphens (`api_keys` -> `api-keys`) unless `_FAMILY` names
another; the admin API's operations take no token. tests/unit/test_scopes.py keeps the spec's
`AccessTokenScope` enum equal to the scopes derived here, so a new family's scopes go into
the spec with its operations.

The scope names are the platform's. The platform's authorization server lists most of them
(docs/behaviour.md, Access tokens, says which are documented there and which are named here
after the same pattern for families it does not list).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any, Final

from tunnelgw.core import spec

# A scope the admin API's operations carry: not a scope a token can hold. Access tokens are
# refused there; the admin API serves a test suite's own setup, with its API key.
ADMIN_ONLY: Final = "admin"
_ADMIN_MODULE = "admin"

# The scope an agent needs to connect with an access token as its authtoken.
TUNNEL_START: Final = "tunnel:start"

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

# The family of each handler module whose scopes are not named after it.
_FAMILY: dict[str, str] = {
    "bot_users": "service-users",
    "endpoint_configurations": "endpoints",
    "event_destinations": "events",
    "event_sources": "events",
    "event_subscriptions": "events",
    "http_response_backends": "backends",
    "https_edge_routes": "edges",
    "https_edges": "edges",
    "ip_policy_rules": "ip-policies",
    "reserved_addrs": "tcp-addrs",
    "reserved_domains": "domains",
    "tcp_edges": "edges",
    "tls_edge_backend": "edges",
    "tls_edges": "edges",
    "tunnel_group_backends": "backends",
    "vault_secrets": "secrets",
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


def _secured(document: dict[str, Any]) -> Iterator[str]:
    """The operationIds of `document` that take a credential."""
    default = document.get("security", [])
    for item in document["paths"].values():
        for method, operation in item.items():
            if method != "parameters" and any(operation.get("security", default)):
                yield operation["operationId"]


def _required(document: dict[str, Any]) -> dict[str, str]:
    table: dict[str, str] = {}
    for operation in _secured(document):
        module, _, verb = operation.partition(".")
        if module == _ADMIN_MODULE:
            table[operation] = ADMIN_ONLY
            continue
        family = _FAMILY.get(module, module.replace("_", "-"))
        kind = "read" if _READS.fullmatch(verb) else "write"
        table[operation] = _SPECIAL.get(operation, f"{family}:{kind}")
    return table


# operationId -> the scope an access token needs to call it (`ADMIN_ONLY`: none will do).
REQUIRED: Final[dict[str, str]] = _required(spec.load())
# Every scope a token may hold, sorted (the spec's `AccessTokenScope` enum lists the same):
# the operations' own, and the platform's others.
SCOPES: Final[tuple[str, ...]] = tuple(
    sorted({*REQUIRED.values(), TUNNEL_START, *_UNUSED} - {ADMIN_ONLY})
)


def required(operation_id: str) -> str | None:
    """The scope `operation_id` needs; None for an operation this table does not know (one
    without a credential check, such as the health probes)."""
    return REQUIRED.get(operation_id)


def unknown(names: list[str]) -> list[str]:
    """The names in `names` that are not scopes."""
    known = set(SCOPES)
    return [name for name in names if name not in known]
