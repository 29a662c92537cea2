"""Tunnel group backends (`bkdtg_`): referenced by TLS edge backend modules; created by
fixtures."""

from __future__ import annotations

from typing import Any, ClassVar

from sqlalchemy import JSON, Index
from sqlmodel import Field

from models.base import DescribedResource


class TunnelGroupBackend(DescribedResource, table=True):
    __tablename__ = "tunnel_group_backend"
    __table_args__ = (Index("ix_tunnel_group_backend_account_id_id", "account_id", "id"),)
    PREFIX: ClassVar[str] = "bkdtg"
    PATH: ClassVar[str] = "/backends/tunnel_group"

    labels: dict[str, str] = Field(default_factory=dict, sa_type=JSON)

    def to_api(self) -> dict[str, Any]:
        return {**self.common_api(), "labels": dict(self.labels)}
