"""HTTPS edge routes (`edghtsrt_`), read-only: written by fixtures; shown in their edge and
referenced by application sessions."""

from __future__ import annotations

from typing import Any, ClassVar

from sqlalchemy import Index, String, Text
from sqlmodel import Field

from tunnelgw.core import urls
from tunnelgw.models.base import DescribedResource, id_field
from tunnelgw.models.edge import backend_module

# The route modules this server does not model: always null.
UNMODELLED_MODULES = (
    "ip_restriction",
    "circuit_breaker",
    "compression",
    "request_headers",
    "response_headers",
    "webhook_verification",
    "oauth",
    "saml",
    "oidc",
    "websocket_tcp_converter",
    "user_agent_filter",
    "traffic_policy",
)


class EdgeRoute(DescribedResource, table=True):
    __tablename__ = "edge_route"
    __table_args__ = (
        Index("ix_edge_route_account_id_id", "account_id", "id"),
        Index("ix_edge_route_edge_id", "edge_id"),
        Index("ix_edge_route_backend_id", "backend_id"),
    )
    PREFIX: ClassVar[str] = "edghtsrt"
    EVENT_KIND: ClassVar[str | None] = "https_edge_route"
    PATH: ClassVar[str] = "/edges/https"
    QUOTA: ClassVar[bool] = False

    edge_id: str = id_field()
    match_type: str = Field(default="path_prefix", sa_type=String(16))  # or exact_path
    match: str = Field(default="/", sa_type=Text)
    # The route's backend module (a tunnel group backend); None while none is set.
    backend_id: str | None = id_field(default=None, nullable=True)
    backend_enabled: bool | None = Field(default=None, nullable=True)

    @property
    def uri(self) -> str:
        return f"{urls.base()}{self.PATH}/{self.edge_id}/routes/{self.id}"

    def to_api(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "uri": self.uri,
            "edge_id": self.edge_id,
            "created_at": self.api_time("created_at"),
            "match_type": self.match_type,
            "match": self.match,
            "description": self.description,
            "metadata": self.meta,
            "backend": backend_module(self.backend_id, self.backend_enabled),
            **dict.fromkeys(UNMODELLED_MODULES),
        }
