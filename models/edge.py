"""Edges (`edghts_`, `edgtcp_`, `edgtls_`). TLS edges are managed through the API; HTTPS and
TCP edges are read-only (written by fixtures). TLS and TCP edges carry a backend module (a
tunnel group backend; for TLS edges also `/edges/tls/{id}/backend`); an HTTPS edge shows its
routes (tunnelgw.models.edge_route)."""

from __future__ import annotations

from typing import Any, ClassVar

from sqlalchemy import JSON, Index, String
from sqlmodel import Field

from tunnelgw.core import urls
from tunnelgw.models.base import DescribedResource, id_field

# Edge kind -> id prefix; the kind is also the path segment (`/edges/tls/...`).
KIND_PREFIXES = {"https": "edghts", "tcp": "edgtcp", "tls": "edgtls"}
BACKENDS_PATH = "/backends/tunnel_group"


def edge_path(edge_id: str) -> str:
    """The collection path of the edge `edge_id` from its prefix (`/edges/tls`)."""
    kind = next((k for k, prefix in KIND_PREFIXES.items() if edge_id.startswith(prefix + "_")), "")
    return f"/edges/{kind}"


def backend_module(backend_id: str | None, enabled: bool | None) -> dict[str, Any] | None:
    """A backend module's API shape (`{enabled, backend}`); None when no module is set."""
    if backend_id is None or enabled is None:
        return None
    return {"enabled": enabled, "backend": urls.ref(BACKENDS_PATH, backend_id)}


class Edge(DescribedResource, table=True):
    __tablename__ = "edge"
    __table_args__ = (
        Index("ix_edge_account_id_id", "account_id", "id"),
        # "Is this tunnel group backend in use" on backend delete.
        Index("ix_edge_backend_id", "backend_id"),
    )
    PREFIX: ClassVar[str] = "edg"  # per row: KIND_PREFIXES[kind]
    PATH: ClassVar[str] = "/edges"
    # to_api() of TCP and TLS edges reads the row and base URL only; HTTPS edge lists pass
    # their routes through a renderer, which lists never cache.
    CACHED_RENDERING: ClassVar[bool] = True

    kind: str = Field(sa_type=String(8))
    hostports: list[str] = Field(default_factory=list, sa_type=JSON)
    # The backend module (TLS and TCP edges); `backend_enabled` is None while none is set.
    backend_id: str | None = id_field(default=None, nullable=True)
    backend_enabled: bool | None = Field(default=None, nullable=True)

    @property
    def uri(self) -> str:
        return f"{urls.base()}{self.PATH}/{self.kind}/{self.id}"

    def to_api(self, routes: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        """The API shape of the edge's kind; `routes` (API shapes) for an HTTPS edge."""
        shape: dict[str, Any] = {**self.common_api(), "hostports": list(self.hostports)}
        if self.kind == "https":
            shape |= {"mutual_tls": None, "tls_termination": None, "routes": routes or []}
        elif self.kind == "tcp":
            shape |= {
                "backend": backend_module(self.backend_id, self.backend_enabled),
                "ip_restriction": None,
                "traffic_policy": None,
            }
        else:
            shape |= {
                "backend": backend_module(self.backend_id, self.backend_enabled),
                "ip_restriction": None,
                "mutual_tls": None,
                "tls_termination": None,
                "traffic_policy": None,
            }
        return shape
