"""Tunnel group backends (`bkdtg_`): a label selector over the account's tunnels; the backend
of TLS and TCP edge modules and HTTPS edge routes."""

from __future__ import annotations

from typing import Any, ClassVar

from sqlalchemy import JSON, Index, bindparam, select
from sqlmodel import Field

from tunnelgw.core import urls
from tunnelgw.models.base import DescribedResource
from tunnelgw.models.edge import Edge
from tunnelgw.models.edge_route import EdgeRoute
from tunnelgw.storage.statements import Query
from tunnelgw.storage.unit import Unit


class TunnelGroupBackend(DescribedResource, table=True):
    __tablename__ = "tunnel_group_backend"
    __table_args__ = (Index("ix_tunnel_group_backend_account_id_id", "account_id", "id"),)
    PREFIX: ClassVar[str] = "bkdtg"
    EVENT_KIND: ClassVar[str | None] = "tunnel_group_backend"
    PATH: ClassVar[str] = "/backends/tunnel_group"
    FIXTURE_SECTION: ClassVar[str | None] = "tunnel_group_backends"

    labels: dict[str, str] = Field(default_factory=dict, sa_type=JSON)

    def to_api(self, tunnel_ids: list[str] | None = None) -> dict[str, Any]:
        """The API shape; `tunnel_ids` are the tunnels it groups (TunnelGroupMember)."""
        return {
            **self.common_api(),
            "labels": dict(self.labels),
            "tunnels": [urls.ref("/tunnels", id_) for id_ in tunnel_ids or []],
        }


async def modules_using(unit: Unit, backend_id: str) -> list[str]:
    """The id of an edge and of an HTTPS edge route whose backend module names the backend
    (at most one of each; [] when none)."""
    found: list[str] = []
    for query in (_EDGE_USES, _ROUTE_USES):
        found += (await unit.exec(query, {"backend_id": backend_id})).all()
    return found


_EDGE_USES = Query(
    select(Edge.id).where(Edge.backend_id == bindparam("backend_id")).limit(1)  # type: ignore[call-overload]
)
_ROUTE_USES = Query(
    select(EdgeRoute.id).where(EdgeRoute.backend_id == bindparam("backend_id")).limit(1)  # type: ignore[call-overload]
)
