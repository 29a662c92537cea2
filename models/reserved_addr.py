"""Reserved TCP addresses (`ra_`): referenced by endpoints; created by fixtures."""

from __future__ import annotations

from typing import Any, ClassVar

from sqlalchemy import Index, String, Text
from sqlmodel import Field

from models.base import DescribedResource


class ReservedAddr(DescribedResource, table=True):
    __tablename__ = "reserved_addr"
    __table_args__ = (Index("ix_reserved_addr_account_id_id", "account_id", "id"),)
    PREFIX: ClassVar[str] = "ra"
    PATH: ClassVar[str] = "/reserved_addrs"

    addr: str = Field(sa_type=Text)  # host:port
    region: str = Field(default="us", sa_type=String(8))

    def to_api(self) -> dict[str, Any]:
        return {**self.common_api(), "addr": self.addr, "region": self.region}
