"""Edges (`edghts_`, `edgtcp_`, `edgtls_`): referenced by endpoints and app sessions; created
by fixtures. A TLS edge carries its backend module (`/edges/tls/{id}/backend`)."""

from __future__ import annotations

from typing import Any, ClassVar

from sqlalchemy import JSON, Index, String
from sqlmodel import Field

from models.base import DescribedResource, id_field
from tunnelgw import urls

# Edge kind -> id prefix; the kind is also the path segment (`/edges/tls/...`).
KIND_PREFIXES = {"https": "edghts", "tcp": "edgtcp", "tls": "edgtls"}


def edge_path(edge_id: str) -> str:
    """The collection path of the edge `edge_id` from its prefix (`/edges/tls`)."""
    kind = next((k for k, prefix in KIND_PREFIXES.items() if edge_id.startswith(prefix + "_")), "")
    return f"/edges/{kind}"


class Edge(DescribedResource, table=True):
    __tablename__ = "edge"
    __table_args__ = (Index("ix_edge_account_id_id", "account_id", "id"),)
    PREFIX: ClassVar[str] = "edg"  # per row: KIND_PREFIXES[kind]
    PATH: ClassVar[str] = "/edges"

    kind: str = Field(sa_type=String(8))
    hostports: list[str] = Field(default_factory=list, sa_type=JSON)
    # The TLS edge backend module; `backend_enabled` is None while no module is set.
    backend_id: str | None = id_field(default=None, nullable=True)
    backend_enabled: bool | None = Field(default=None, nullable=True)

    @property
    def uri(self) -> str:
        return urls.absolute(f"{self.PATH}/{self.kind}/{self.id}")

    def to_api(self) -> dict[str, Any]:
        return {**self.common_api(), "hostports": list(self.hostports)}
