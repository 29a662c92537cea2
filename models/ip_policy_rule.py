"""IP policy rules (`ipx_`): one CIDR network of an IP policy, allowed or denied. A rule goes
with its policy (deleted with it)."""

from __future__ import annotations

from typing import Any, ClassVar

from sqlalchemy import Index, String
from sqlmodel import Field

from tunnelgw.core import urls
from tunnelgw.models.base import DescribedResource, id_field
from tunnelgw.storage.unit import Unit


class IpPolicyRule(DescribedResource, table=True):
    __tablename__ = "ip_policy_rule"
    __table_args__ = (Index("ix_ip_policy_rule_account_id_id", "account_id", "id"),)
    PREFIX: ClassVar[str] = "ipx"
    EVENT_KIND: ClassVar[str | None] = "ip_policy_rule"
    PATH: ClassVar[str] = "/ip_policy_rules"
    FIXTURE_SECTION: ClassVar[str | None] = "ip_policy_rules"
    CACHED_RENDERING: ClassVar[bool] = True  # to_api(): the row and base URL only

    ip_policy_id: str = id_field(foreign_key="ip_policy.id", ondelete="CASCADE", index=True)
    cidr: str = Field(sa_type=String(64))  # canonical (tunnelgw.rules.cidrs)
    action: str = Field(sa_type=String(8))  # allow or deny

    def to_api(self) -> dict[str, Any]:
        return {
            **self.common_api(),
            "cidr": self.cidr,
            "ip_policy": urls.ref("/ip_policies", self.ip_policy_id),
            "action": self.action,
        }


async def rules_of(unit: Unit, policy_ids: list[str]) -> list[IpPolicyRule]:
    """The rules of the policies `policy_ids` (one statement)."""
    return await unit.select_in(IpPolicyRule, "ip_policy_id", policy_ids)
