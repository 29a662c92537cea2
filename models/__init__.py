"""SQLModel tables, one module per table; importing this package registers them all."""

from models.abuse_report import AbuseReport
from models.access_token import AccessToken
from models.account import Account
from models.agent_ingress import AgentIngress
from models.ai_gateway_api_key import AiGatewayApiKey
from models.api_key import ApiKey
from models.application_session import ApplicationSession
from models.application_user import ApplicationUser
from models.certificate_authority import CertificateAuthority
from models.credential import Credential
from models.edge import Edge
from models.edge_route import EdgeRoute
from models.endpoint import Endpoint
from models.endpoint_configuration import EndpointConfiguration
from models.event_delivery import EventDelivery
from models.event_destination import EventDestination
from models.event_source import EventSource
from models.event_subscription import EventSubscription, EventSubscriptionDestination
from models.fault_rule import FaultRule
from models.fixture_load import FixtureLoad
from models.http_response_backend import HttpResponseBackend
from models.ip_policy import IpPolicy
from models.ip_policy_rule import IpPolicyRule
from models.ip_restriction import IpRestriction, IpRestrictionPolicy
from models.issuing_authority import IssuingAuthority
from models.kubernetes_operator import KubernetesOperator
from models.principal import Principal
from models.quota_usage import QuotaUsage
from models.request_journal import JournalEntry
from models.reserved_addr import ReservedAddr
from models.reserved_domain import ReservedDomain
from models.ssh_certificate_authority import SshCertificateAuthority
from models.ssh_credential import SshCredential
from models.ssh_host_certificate import SshHostCertificate
from models.ssh_user_certificate import SshUserCertificate
from models.tls_certificate import TlsCertificate
from models.tunnel import Tunnel
from models.tunnel_group_backend import TunnelGroupBackend
from models.tunnel_group_member import TunnelGroupMember
from models.tunnel_session import TunnelSession
from models.vault import Vault
from models.vault_secret import VaultSecret

__all__ = [
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
    "EventDelivery",
    "EventDestination",
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
