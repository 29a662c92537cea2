"""Tunnels (`tn_`): referenced by endpoints; created by fixtures (no API operation)."""

from __future__ import annotations

from typing import Any, ClassVar

from sqlalchemy import Index

from models.base import DescribedResource


class Tunnel(DescribedResource, table=True):
    __tablename__ = "tunnel"
    __table_args__ = (Index("ix_tunnel_account_id_id", "account_id", "id"),)
    PREFIX: ClassVar[str] = "tn"
    PATH: ClassVar[str] = "/tunnels"

    def to_api(self) -> dict[str, Any]:
        return self.common_api()
