"""Endpoints (`ep_`), read-only: active endpoints served by a tunnel or an edge; created by
fixtures."""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar

from sqlalchemy import Index, String, Text
from sqlmodel import Field

from models.base import TIMESTAMP, AccountScoped, id_field
from models.edge import edge_path
from tunnelgw import timefmt, urls


class Endpoint(AccountScoped, table=True):
    __tablename__ = "endpoint"
    __table_args__ = (Index("ix_endpoint_account_id_id", "account_id", "id"),)
    PREFIX: ClassVar[str] = "ep"
    PATH: ClassVar[str] = "/endpoints"

    updated_at: datetime = Field(default_factory=timefmt.utcnow, sa_type=TIMESTAMP)
    region: str = Field(default="us", sa_type=String(8))
    proto: str = Field(sa_type=String(8))  # http, https, tcp, tls
    hostport: str = Field(sa_type=Text)
    public_url: str = Field(sa_type=Text)
    type: str = Field(sa_type=String(16))  # ephemeral or edge
    reserved_domain_id: str | None = id_field(default=None, nullable=True)
    reserved_addr_id: str | None = id_field(default=None, nullable=True)
    tunnel_id: str | None = id_field(default=None, nullable=True)
    edge_id: str | None = id_field(default=None, nullable=True)
    # The user metadata of the serving tunnel or edge, copied when the endpoint is recorded.
    meta: str = Field(default="", sa_type=Text, sa_column_kwargs={"name": "metadata"})

    def to_api(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "uri": self.uri,
            "region": self.region,
            "created_at": self.api_time("created_at"),
            "updated_at": self.api_time("updated_at"),
            "public_url": self.public_url,
            "proto": self.proto,
            "hostport": self.hostport,
            "type": self.type,
            "metadata": self.meta,
            "domain": urls.ref("/reserved_domains", self.reserved_domain_id),
            "tcp_addr": urls.ref("/reserved_addrs", self.reserved_addr_id),
            "tunnel": urls.ref("/tunnels", self.tunnel_id),
            "edge": urls.ref(edge_path(self.edge_id), self.edge_id) if self.edge_id else None,
        }
