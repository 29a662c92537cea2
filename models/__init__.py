"""SQLModel tables, one module per table; importing this package registers them all, and
derives from the tables' declarations what lists every resource of a kind (`RESOURCES`,
`QUOTA_KINDS`)."""

from tunnelgw.models.abuse_report import AbuseReport
from tunnelgw.models.access_token import AccessToken
from tunnelgw.models.account import Account
from tunnelgw.models.agent_ingress import AgentIngress
from tunnelgw.models.ai_gateway_api_key import AiGatewayApiKey
from tunnelgw.models.api_key import ApiKey
from tunnelgw.models.application_session import ApplicationSession
from tunnelgw.models.application_user import ApplicationUser
from tunnelgw.models.base import AccountScoped
from tunnelgw.models.certificate_authority import CertificateAuthority
from tunnelgw.models.credential import Credential
from tunnelgw.models.edge import Edge
from tunnelgw.models.edge_route import EdgeRoute
from tunnelgw.models.endpoint import Endpoint
from tunnelgw.models.endpoint_configuration import EndpointConfiguration
from tunnelgw.models.event_destination import EventDestination
from tunnelgw.models.event_record import EventRecord
from tunnelgw.models.event_source import EventSource
from tunnelgw.models.event_subscription import EventSubscription, EventSubscriptionDestination
from tunnelgw.models.fault_rule import FaultRule
from tunnelgw.models.fixture_load import FixtureLoad
from tunnelgw.models.http_response_backend import HttpResponseBackend
from tunnelgw.models.ip_policy import IpPolicy
from tunnelgw.models.ip_policy_rule import IpPolicyRule
from tunnelgw.models.ip_restriction import IpRestriction, IpRestrictionPolicy
from tunnelgw.models.issuing_authority import IssuingAuthority
from tunnelgw.models.kubernetes_operator import KubernetesOperator
from tunnelgw.models.principal import Principal
from tunnelgw.models.quota_usage import QuotaUsage
from tunnelgw.models.request_journal import JournalEntry
from tunnelgw.models.reserved_addr import ReservedAddr
from tunnelgw.models.reserved_domain import ReservedDomain
from tunnelgw.models.ssh_certificate_authority import SshCertificateAuthority
from tunnelgw.models.ssh_credential import SshCredential
from tunnelgw.models.ssh_host_certificate import SshHostCertificate
from tunnelgw.models.ssh_user_certificate import SshUserCertificate
from tunnelgw.models.tls_certificate import TlsCertificate
from tunnelgw.models.tunnel import Tunnel
from tunnelgw.models.tunnel_group_backend import TunnelGroupBackend
from tunnelgw.models.tunnel_group_member import TunnelGroupMember
from tunnelgw.models.tunnel_session import TunnelSession
from tunnelgw.models.vault import Vault
from tunnelgw.models.vault_secret import VaultSecret

__all__ = [
    "QUOTA_KINDS",
    "RESOURCES",
    "AbuseReport",
    "AccessToken",
    "Account",
    "AgentIngress",
    "AiGatewayApiKey",
    "ApiKey",
    "ApplicationSession",
    "ApplicationUser",
    "CertificateAuthority",
    "Credential",
    "Edge",
    "EdgeRoute",
    "Endpoint",
    "EndpointConfiguration",
    "EventDestination",
    "EventRecord",
    "EventSource",
    "EventSubscription",
    "EventSubscriptionDestination",
    "FaultRule",
    "FixtureLoad",
    "HttpResponseBackend",
    "IpPolicy",
    "IpPolicyRule",
    "IpRestriction",
    "IpRestrictionPolicy",
    "IssuingAuthority",
    "JournalEntry",
    "KubernetesOperator",
    "Principal",
    "QuotaUsage",
    "ReservedAddr",
    "ReservedDomain",
    "SshCertificateAuthority",
    "SshCredential",
    "SshHostCertificate",
    "SshUserCertificate",
    "TlsCertificate",
    "Tunnel",
    "TunnelGroupBackend",
    "TunnelGroupMember",
    "TunnelSession",
    "Vault",
    "VaultSecret",
]


def _tables(base: type[AccountScoped]) -> list[type[AccountScoped]]:
    found = [base] if hasattr(base, "__table__") else []
    for sub in base.__subclasses__():
        found.extend(_tables(sub))
    return found


# Every table of an account's resources, by table name: what the lists of resources derive
# from (a resource declares itself in its model: PREFIX, PATH, EVENT_KIND, QUOTA, ...).
RESOURCES: tuple[type[AccountScoped], ...] = tuple(
    sorted(_tables(AccountScoped), key=lambda model: str(model.__tablename__))
)
# The kinds of rows the per-account quotas count (their table names; settings `quotas`).
QUOTA_KINDS = frozenset(str(model.__tablename__) for model in RESOURCES if model.QUOTA)
