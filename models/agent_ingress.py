"""Agent ingresses (`agin_`): a customer domain delegated to the service, with one regional
ingress subdomain per region, and optional automatic certificate management."""

from __future__ import annotations

from typing import Any, ClassVar

from sqlalchemy import JSON, Index, String
from sqlmodel import Field

from tunnelgw.models.base import DescribedResource, id_field
from tunnelgw.models.cert_managed import CertManaged


class AgentIngress(DescribedResource, CertManaged, table=True):
    __tablename__ = "agent_ingress"
    __table_args__ = (
        Index("ix_agent_ingress_account_id_id", "account_id", "id"),
        Index("ux_agent_ingress_domain", "domain", unique=True),
    )
    PREFIX: ClassVar[str] = "agin"
    EVENT_KIND: ClassVar[str | None] = "agent_ingress"
    PATH: ClassVar[str] = "/agent_ingresses"
    FIXTURE_SECTION: ClassVar[str | None] = "agent_ingresses"

    domain: str = Field(sa_type=String(253))  # lower case
    ns_targets: list[str] = Field(default_factory=list, sa_type=JSON)
    region_domains: list[str] = Field(default_factory=list, sa_type=JSON)
    # The latest certificate certificate management issued (not shown by the API).
    certificate_id: str | None = id_field(default=None, nullable=True)

    def cert_name(self) -> str:
        """Certificates cover every regional ingress domain: `*.<domain>`."""
        return f"*.{self.domain}"

    def to_api(self) -> dict[str, Any]:
        return {
            **self.common_api(),
            "domain": self.domain,
            "ns_targets": list(self.ns_targets),
            "region_domains": list(self.region_domains),
            "certificate_management_policy": self.policy_api(),
            "certificate_management_status": self.status_api(),
        }
