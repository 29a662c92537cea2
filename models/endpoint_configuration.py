"""Endpoint configurations (`ec_`): referenced by reserved domains; created by fixtures."""

from __future__ import annotations

from typing import Any, ClassVar

from sqlalchemy import Index, String
from sqlmodel import Field

from tunnelgw.models.base import DescribedResource


class EndpointConfiguration(DescribedResource, table=True):
    __tablename__ = "endpoint_configuration"
    __table_args__ = (Index("ix_endpoint_configuration_account_id_id", "account_id", "id"),)
    PREFIX: ClassVar[str] = "ec"
    EVENT_KIND: ClassVar[str | None] = "endpoint_configuration"
    PATH: ClassVar[str] = "/endpoint_configurations"
    QUOTA: ClassVar[bool] = False

    type: str = Field(default="https", sa_type=String(8))  # http or https

    def to_api(self) -> dict[str, Any]:
        return {**self.common_api(), "type": self.type}
