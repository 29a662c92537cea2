"""SQLModel tables, one module per table. A table's module is imported when its class is first
named (`from tunnelgw.models import Tunnel`), not with this package: a server imports the
tables its requests use (bench/README.md, issue 31, thirteenth round). What needs every table
(their schema, `RESOURCES`, `QUOTA_KINDS`, an account's deletion, a snapshot) calls
`load_all` or reads a name below that does."""

from __future__ import annotations

import functools
import importlib
import importlib.util
import pkgutil
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tunnelgw.models.abuse_report import AbuseReport as AbuseReport
    from tunnelgw.models.access_token import AccessToken as AccessToken
    from tunnelgw.models.account import Account as Account
    from tunnelgw.models.agent_ingress import AgentIngress as AgentIngress
    from tunnelgw.models.ai_gateway_api_key import AiGatewayApiKey as AiGatewayApiKey
    from tunnelgw.models.api_key import ApiKey as ApiKey
    from tunnelgw.models.application_session import ApplicationSession as ApplicationSession
    from tunnelgw.models.application_user import ApplicationUser as ApplicationUser
    from tunnelgw.models.base import AccountScoped as AccountScoped
    from tunnelgw.models.certificate_authority import CertificateAuthority as CertificateAuthority
    from tunnelgw.models.credential import Credential as Credential
    from tunnelgw.models.edge import Edge as Edge
    from tunnelgw.models.edge_route import EdgeRoute as EdgeRoute
    from tunnelgw.models.endpoint import Endpoint as Endpoint
    from tunnelgw.models.endpoint_configuration import (
        EndpointConfiguration as EndpointConfiguration,
    )
    from tunnelgw.models.event_destination import EventDestination as EventDestination
    from tunnelgw.models.event_record import EventRecord as EventRecord
    from tunnelgw.models.event_route import EventRoute as EventRoute
    from tunnelgw.models.event_source import EventSource as EventSource
    from tunnelgw.models.event_subscription import EventSubscription as EventSubscription
    from tunnelgw.models.event_subscription import (
        EventSubscriptionDestination as EventSubscriptionDestination,
    )
    from tunnelgw.models.fault_rule import FaultRule as FaultRule
    from tunnelgw.models.fixture_load import FixtureLoad as FixtureLoad
    from tunnelgw.models.http_response_backend import HttpResponseBackend as HttpResponseBackend
    from tunnelgw.models.ip_policy import IpPolicy as IpPolicy
    from tunnelgw.models.ip_policy_rule import IpPolicyRule as IpPolicyRule
    from tunnelgw.models.ip_restriction import IpRestriction as IpRestriction
    from tunnelgw.models.ip_restriction import IpRestrictionPolicy as IpRestrictionPolicy
    from tunnelgw.models.issuing_authority import IssuingAuthority as IssuingAuthority
    from tunnelgw.models.kubernetes_operator import KubernetesOperator as KubernetesOperator
    from tunnelgw.models.principal import Principal as Principal
    from tunnelgw.models.quota_usage import QuotaUsage as QuotaUsage
    from tunnelgw.models.request_journal import JournalEntry as JournalEntry
    from tunnelgw.models.reserved_addr import ReservedAddr as ReservedAddr
    from tunnelgw.models.reserved_domain import ReservedDomain as ReservedDomain
    from tunnelgw.models.ssh_certificate_authority import (
        SshCertificateAuthority as SshCertificateAuthority,
    )
    from tunnelgw.models.ssh_credential import SshCredential as SshCredential
    from tunnelgw.models.ssh_host_certificate import SshHostCertificate as SshHostCertificate
    from tunnelgw.models.ssh_user_certificate import SshUserCertificate as SshUserCertificate
    from tunnelgw.models.tls_certificate import TlsCertificate as TlsCertificate
    from tunnelgw.models.tunnel import Tunnel as Tunnel
    from tunnelgw.models.tunnel_group_backend import TunnelGroupBackend as TunnelGroupBackend
    from tunnelgw.models.tunnel_group_member import TunnelGroupMember as TunnelGroupMember
    from tunnelgw.models.tunnel_session import TunnelSession as TunnelSession
    from tunnelgw.models.vault import Vault as Vault
    from tunnelgw.models.vault_secret import VaultSecret as VaultSecret

    # Every table of an account's resources, by table name: what the lists of resources
    # derive from (a resource declares itself in its model: PREFIX, PATH, EVENT_KIND, ...).
    RESOURCES: tuple[type[AccountScoped], ...]
    # The kinds of rows the per-account quotas count (their table names; settings `quotas`).
    QUOTA_KINDS: frozenset[str]

# The module of each class, imported when the class is first named (`__getattr__`).
_MODULES: dict[str, str] = {
    "AbuseReport": "abuse_report",
    "AccessToken": "access_token",
    "Account": "account",
    "AgentIngress": "agent_ingress",
    "AiGatewayApiKey": "ai_gateway_api_key",
    "ApiKey": "api_key",
    "ApplicationSession": "application_session",
    "ApplicationUser": "application_user",
    "AccountScoped": "base",
    "CertificateAuthority": "certificate_authority",
    "Credential": "credential",
    "Edge": "edge",
    "EdgeRoute": "edge_route",
    "Endpoint": "endpoint",
    "EndpointConfiguration": "endpoint_configuration",
    "EventDestination": "event_destination",
    "EventRecord": "event_record",
    "EventRoute": "event_route",
    "EventSource": "event_source",
    "EventSubscription": "event_subscription",
    "EventSubscriptionDestination": "event_subscription",
    "FaultRule": "fault_rule",
    "FixtureLoad": "fixture_load",
    "HttpResponseBackend": "http_response_backend",
    "IpPolicy": "ip_policy",
    "IpPolicyRule": "ip_policy_rule",
    "IpRestriction": "ip_restriction",
    "IpRestrictionPolicy": "ip_restriction",
    "IssuingAuthority": "issuing_authority",
    "KubernetesOperator": "kubernetes_operator",
    "Principal": "principal",
    "QuotaUsage": "quota_usage",
    "JournalEntry": "request_journal",
    "ReservedAddr": "reserved_addr",
    "ReservedDomain": "reserved_domain",
    "SshCertificateAuthority": "ssh_certificate_authority",
    "SshCredential": "ssh_credential",
    "SshHostCertificate": "ssh_host_certificate",
    "SshUserCertificate": "ssh_user_certificate",
    "TlsCertificate": "tls_certificate",
    "Tunnel": "tunnel",
    "TunnelGroupBackend": "tunnel_group_backend",
    "TunnelGroupMember": "tunnel_group_member",
    "TunnelSession": "tunnel_session",
    "Vault": "vault",
    "VaultSecret": "vault_secret",
}


@functools.cache
def load_all() -> None:
    """Import every module of the package: every table on SQLModel's metadata."""
    for module in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{module.name}")


def table_named(name: str) -> type[AccountScoped] | None:
    """The table of an account's resources named `name`, its module imported now (a table's
    module is named as the table: tests/unit/test_models.py checks it); None if none is."""
    from tunnelgw.models.base import AccountScoped

    if not name.isidentifier() or name.startswith("_"):
        return None
    if importlib.util.find_spec(f"{__name__}.{name}") is None:
        return None
    importlib.import_module(f"{__name__}.{name}")
    return next((model for model in _tables(AccountScoped) if model.__tablename__ == name), None)


def _tables(base: type[AccountScoped]) -> list[type[AccountScoped]]:
    found = [base] if hasattr(base, "__table__") else []
    for sub in base.__subclasses__():
        found.extend(_tables(sub))
    return found


def _derived() -> dict[str, Any]:
    """RESOURCES and QUOTA_KINDS, from every table."""
    from tunnelgw.models.base import AccountScoped

    load_all()
    resources = tuple(sorted(_tables(AccountScoped), key=lambda model: str(model.__tablename__)))
    quota_kinds = frozenset(str(model.__tablename__) for model in resources if model.QUOTA)
    return {"RESOURCES": resources, "QUOTA_KINDS": quota_kinds}


if not TYPE_CHECKING:  # the type checker reads the imports above instead

    def __getattr__(name: str) -> Any:
        """A class by its name, its module imported now; RESOURCES and QUOTA_KINDS made."""
        if name in ("RESOURCES", "QUOTA_KINDS"):
            found = _derived()
        elif name in _MODULES:
            found = {name: getattr(importlib.import_module(f"{__name__}.{_MODULES[name]}"), name)}
        else:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        globals().update(found)  # read directly from now on
        return found[name]
