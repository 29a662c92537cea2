"""Endpoints (`ep_`), read-only: active endpoints served by a tunnel or an edge; created by
fixtures."""

from __future__ import annotations

import functools
from datetime import datetime
from typing import Any, ClassVar
from urllib.parse import urlsplit

from sqlalchemy import JSON, Index, String, Text, bindparam, false, select
from sqlmodel import Field

from tunnelgw.core import timefmt, urls
from tunnelgw.models.base import TIMESTAMP, AccountScoped, id_field
from tunnelgw.models.edge import edge_path
from tunnelgw.models.principal import principal_ref
from tunnelgw.storage.statements import Query
from tunnelgw.storage.unit import Unit

# The text columns added by revision 0005 filled the rows before it with '' (a database built
# from the models carries the same defaults as one migrated: tests/unit/test_migrations.py).
_EMPTY = {"server_default": ""}


class Endpoint(AccountScoped, table=True):
    __tablename__ = "endpoint"
    __table_args__ = (Index("ix_endpoint_account_id_id", "account_id", "id"),)
    PREFIX: ClassVar[str] = "ep"
    EVENT_KIND: ClassVar[str | None] = "endpoint"
    PATH: ClassVar[str] = "/endpoints"
    FIXTURE_SECTION: ClassVar[str | None] = "endpoints"
    CACHED_RENDERING: ClassVar[bool] = True  # to_api(): the row and base URL only

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
    # Fields current client libraries read (issue 10); fixtures set them.
    name: str = Field(default="", sa_type=Text, sa_column_kwargs=_EMPTY)
    description: str = Field(default="", sa_type=Text, sa_column_kwargs=_EMPTY)
    upstream_url: str = Field(default="", sa_type=Text, sa_column_kwargs=_EMPTY)
    upstream_protocol: str = Field(default="", sa_type=String(16), sa_column_kwargs=_EMPTY)
    traffic_policy: str = Field(default="", sa_type=Text, sa_column_kwargs=_EMPTY)
    bindings: list[str] = Field(
        default_factory=lambda: ["public"],
        sa_type=JSON,
        sa_column_kwargs={"server_default": '["public"]'},
    )
    pooling_enabled: bool = Field(default=False, sa_column_kwargs={"server_default": false()})
    principal_id: str | None = id_field(default=None, nullable=True)
    tunnel_session_id: str | None = id_field(default=None, nullable=True, index=True)

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
            **url_parts(self.public_url),
            "name": self.name,
            "description": self.description,
            "upstream_url": self.upstream_url,
            "upstream_protocol": self.upstream_protocol,
            "principal": principal_ref(self.principal_id),
            "traffic_policy": self.traffic_policy,
            "bindings": list(self.bindings),
            "tunnel_session": urls.ref("/tunnel_sessions", self.tunnel_session_id),
            "pooling_enabled": self.pooling_enabled,
        }


DEFAULT_PORTS = {"http": 80, "https": 443, "tls": 443}


@functools.lru_cache(maxsize=4096)
def _parts(url: str) -> tuple[str, str, int]:
    parsed = urlsplit(url)
    try:
        port = parsed.port
    except ValueError:
        port = None
    scheme = parsed.scheme
    return scheme, parsed.hostname or "", port or DEFAULT_PORTS.get(scheme, 0)


def url_parts(url: str) -> dict[str, Any]:
    """`url` (the public URL) and its `scheme`, `host` and `port` (the scheme's default port
    when the URL has none)."""
    scheme, host, port = _parts(url)
    return {"url": url, "scheme": scheme, "host": host, "port": port}


_CLOUD_ON_DOMAIN = Query(
    select(Endpoint.id)  # type: ignore[call-overload]
    .where(Endpoint.reserved_domain_id == bindparam("domain_id"), Endpoint.type == "cloud")
    .order_by(Endpoint.id)
)


async def cloud_endpoints_on(unit: Unit, domain_id: str) -> list[str]:
    """The ids of the cloud endpoints whose URL is on the reserved domain `domain_id`."""
    return list((await unit.exec(_CLOUD_ON_DOMAIN, {"domain_id": domain_id})).all())
