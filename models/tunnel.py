"""Tunnels (`tn_`), read-only: the tunnels agents start (simulated agent sessions,
tunnelgw.services.agents) or fixtures write. A tunnel with labels is a backend tunnel: it has
no public URL and serves the tunnel group backends whose labels its labels include
(tunnelgw.models.tunnel_group_member)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar

from sqlalchemy import JSON, Index, String, Text
from sqlmodel import Field

from tunnelgw.core import timefmt, urls
from tunnelgw.models.base import TIMESTAMP, DescribedResource, id_field


class Tunnel(DescribedResource, table=True):
    __tablename__ = "tunnel"
    __table_args__ = (Index("ix_tunnel_account_id_id", "account_id", "id"),)
    PREFIX: ClassVar[str] = "tn"
    EVENT_KIND: ClassVar[str | None] = "tunnel"
    PATH: ClassVar[str] = "/tunnels"

    # `description` (of DescribedResource) is kept for fixture files; the API shows none.
    public_url: str = Field(default="", sa_type=Text)
    started_at: datetime = Field(default_factory=timefmt.utcnow, sa_type=TIMESTAMP)
    proto: str = Field(default="https", sa_type=String(8))  # http, https, tcp, tls
    region: str = Field(default="us", sa_type=String(8))
    labels: dict[str, str] = Field(default_factory=dict, sa_type=JSON)
    forwards_to: str = Field(default="", sa_type=Text)
    # The endpoint the tunnel serves (the first endpoint of its fixture file naming it).
    endpoint_id: str | None = id_field(default=None, nullable=True)
    # The agent session that started it (tunnelgw.models.tunnel_session); None for fixture tunnels.
    tunnel_session_id: str | None = id_field(default=None, nullable=True, index=True)

    def to_api(self, backend_ids: list[str] | None = None) -> dict[str, Any]:
        """The API shape; `backend_ids` are the tunnel group backends it serves."""
        return {
            "id": self.id,
            "uri": self.uri,
            "public_url": self.public_url,
            "started_at": self.api_time("started_at"),
            "metadata": self.meta,
            "proto": self.proto,
            "region": self.region,
            "tunnel_session": urls.ref("/tunnel_sessions", self.tunnel_session_id),
            "endpoint": urls.ref("/endpoints", self.endpoint_id),
            "labels": dict(self.labels),
            "backends": [urls.ref("/backends/tunnel_group", id_) for id_ in backend_ids or []],
            "forwards_to": self.forwards_to,
        }
