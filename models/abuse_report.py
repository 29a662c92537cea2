"""Abuse reports (`abrp_`): URLs reported as abusive, and what was decided for each hostname.

The review is simulated on the account's clock: the hostnames are decided one after the other,
each `step_seconds` after the one before (the first `step_seconds` after the report was filed);
whether each hostname was served here was recorded when the report was filed.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar

from sqlalchemy import JSON, Index, Integer, Text
from sqlmodel import Field

from tunnelgw.core import timefmt
from tunnelgw.models.base import AccountScoped

# Report statuses and hostname statuses, as the platform names them.
PENDING, PROCESSED, PARTIALLY_PROCESSED = "PENDING", "PROCESSED", "PARTIALLY_PROCESSED"
BANNED, IGNORE = "BANNED", "IGNORE"


class AbuseReport(AccountScoped, table=True):
    __tablename__ = "abuse_report"
    __table_args__ = (Index("ix_abuse_report_account_id_id", "account_id", "id"),)
    PREFIX: ClassVar[str] = "abrp"
    PATH: ClassVar[str] = "/abuse_reports"
    FIXTURE_SECTION: ClassVar[str | None] = "abuse_reports"
    # to_api() reads the clock (the statuses move with it): never a cached rendering.
    CACHED_RENDERING: ClassVar[bool] = False

    urls: list[str] = Field(default_factory=list, sa_type=JSON)
    meta: str = Field(default="", sa_type=Text, sa_column_kwargs={"name": "metadata"})
    # [{"hostname": ..., "served": bool}] in the order the URLs name them, each once.
    hostnames: list[dict[str, Any]] = Field(default_factory=list, sa_type=JSON)
    step_seconds: int = Field(default=0, sa_type=Integer)

    def decided(self, now: datetime) -> int:
        """How many hostnames (from the first) are decided at `now`."""
        if self.step_seconds <= 0:
            return len(self.hostnames)
        elapsed = max(0, int((now - self.created_at).total_seconds()))
        return min(len(self.hostnames), elapsed // self.step_seconds)

    def to_api(self) -> dict[str, Any]:
        done = self.decided(timefmt.utcnow())
        hostnames = [
            {
                "hostname": item["hostname"],
                "status": PENDING if index >= done else BANNED if item["served"] else IGNORE,
            }
            for index, item in enumerate(self.hostnames)
        ]
        status = PARTIALLY_PROCESSED
        if done == 0:
            status = PENDING
        elif done >= len(hostnames):
            status = PROCESSED
        return {
            "id": self.id,
            "uri": self.uri,
            "created_at": self.api_time("created_at"),
            "urls": list(self.urls),
            "metadata": self.meta,
            "status": status,
            "hostnames": hostnames,
        }
