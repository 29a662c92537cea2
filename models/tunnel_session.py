"""Tunnel sessions (`ts_`): one connected agent, started through the admin API's simulated
agents (tunnelgw.services.agents) with a tunnel credential's authtoken. Its tunnels and agent
endpoints name it (`tunnel_session_id`) and end with it."""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar

from sqlalchemy import Index, String, Text
from sqlmodel import Field

from tunnelgw.core import timefmt, urls
from tunnelgw.models.base import TIMESTAMP, AccountScoped, id_field

TRANSPORT = "ngrok/v2"  # the agent protocol's name, as the platform's API reports it


class TunnelSession(AccountScoped, table=True):
    __tablename__ = "tunnel_session"
    __table_args__ = (Index("ix_tunnel_session_account_id_id", "account_id", "id"),)
    PREFIX: ClassVar[str] = "ts"
    PATH: ClassVar[str] = "/tunnel_sessions"

    started_at: datetime = Field(default_factory=timefmt.utcnow, sa_type=TIMESTAMP)
    agent_version: str = Field(sa_type=String(32))
    os: str = Field(sa_type=String(32))
    region: str = Field(default="us", sa_type=String(8))
    ip: str = Field(sa_type=String(64))
    transport: str = Field(default=TRANSPORT, sa_type=String(16))
    # The agent's configured metadata (not the API's description/metadata pair).
    meta: str = Field(default="", sa_type=Text, sa_column_kwargs={"name": "metadata"})
    # The tunnel credential whose authtoken started it, or the access token (`pat_`) an agent
    # connected with (no foreign key: a deleted credential does not end running agents; the
    # Ref then answers 404, as the credential is gone).
    credential_id: str = id_field()
    # Set by the update command: the version the agent runs once restarted ("" when none).
    updated_to: str = Field(default="", sa_type=String(32))

    def to_api(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "uri": self.uri,
            "agent_version": self.agent_version,
            # An agent that connected with an access token (`pat_`) names the token.
            "credential": urls.ref(
                "/access_tokens" if self.credential_id.startswith("pat_") else "/credentials",
                self.credential_id,
            ),
            "ip": self.ip,
            "metadata": self.meta,
            "os": self.os,
            "region": self.region,
            "started_at": self.api_time("started_at"),
            "transport": self.transport,
        }
