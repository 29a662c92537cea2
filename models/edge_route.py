"""HTTPS edge routes (`edghtsrt_`): referenced by application sessions; created by
fixtures."""

from __future__ import annotations

from typing import Any, ClassVar

from sqlalchemy import Index, Text
from sqlmodel import Field

from models.base import DescribedResource, id_field
from tunnelgw import urls


class EdgeRoute(DescribedResource, table=True):
    __tablename__ = "edge_route"
    __table_args__ = (Index("ix_edge_route_account_id_id", "account_id", "id"),)
    PREFIX: ClassVar[str] = "edghtsrt"
    PATH: ClassVar[str] = "/edges/https"

    edge_id: str = id_field()
    match: str = Field(default="/", sa_type=Text)

    @property
    def uri(self) -> str:
        return urls.absolute(f"{self.PATH}/{self.edge_id}/routes/{self.id}")

    def to_api(self) -> dict[str, Any]:
        return {**self.common_api(), "edge_id": self.edge_id, "match": self.match}
