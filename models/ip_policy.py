"""IP policies (`ipp_`): named groups of allow and deny rules (tunnelgw.models.ip_policy_rule) that
IP restrictions apply."""

from __future__ import annotations

from typing import Any, ClassVar

from sqlalchemy import Index

from tunnelgw.models.base import DescribedResource


class IpPolicy(DescribedResource, table=True):
    __tablename__ = "ip_policy"
    __table_args__ = (Index("ix_ip_policy_account_id_id", "account_id", "id"),)
    PREFIX: ClassVar[str] = "ipp"
    EVENT_KIND: ClassVar[str | None] = "ip_policy"
    PATH: ClassVar[str] = "/ip_policies"
    FIXTURE_SECTION: ClassVar[str | None] = "ip_policies"
    CACHED_RENDERING: ClassVar[bool] = True  # to_api(): the row and base URL only

    def to_api(self) -> dict[str, Any]:
        return self.common_api()
