"""Which tunnels each tunnel group backend groups: the account's tunnels with labels whose
labels include every label of the backend (a backend without labels groups every labeled
tunnel). Written when a backend's labels or the account's tunnels are written (by the API
and by fixtures), so reads in either direction are one index lookup.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import Index, bindparam, delete, select

from tunnelgw.models.base import Row, id_field
from tunnelgw.models.tunnel import Tunnel
from tunnelgw.models.tunnel_group_backend import TunnelGroupBackend
from tunnelgw.storage.statements import Query
from tunnelgw.storage.unit import Unit


class TunnelGroupMember(Row, table=True):
    __tablename__ = "tunnel_group_member"
    __table_args__ = (Index("ix_tunnel_group_member_tunnel_id", "tunnel_id"),)

    backend_id: str = id_field(
        primary_key=True, foreign_key="tunnel_group_backend.id", ondelete="CASCADE"
    )
    tunnel_id: str = id_field(primary_key=True, foreign_key="tunnel.id", ondelete="CASCADE")
    account_id: str = id_field(foreign_key="account.id", ondelete="CASCADE")


def groups(backend_labels: Mapping[str, str], tunnel_labels: Mapping[str, str]) -> bool:
    """Whether a backend with `backend_labels` groups a tunnel with `tunnel_labels`."""
    return bool(tunnel_labels) and all(
        tunnel_labels.get(name) == value for name, value in backend_labels.items()
    )


async def regroup_backend(unit: Unit, backend: Any) -> list[str]:
    """Write the members of `backend` (its row added or loaded in this unit) from the
    account's tunnels; their ids, oldest first. Reads every labeled tunnel of the account:
    backends are written far less often than they are read."""
    await unit.exec(_DELETE_OF_BACKEND, {"backend_id": backend.id})
    tunnels = await unit.exec(_TUNNELS, {"account_id": backend.account_id})
    members = sorted(id_ for id_, labels in tunnels if groups(backend.labels, labels))
    unit.add_all(
        [
            TunnelGroupMember.new(
                backend_id=backend.id, tunnel_id=tunnel_id, account_id=backend.account_id
            )
            for tunnel_id in members
        ]
    )
    return members


async def regroup_account(unit: Unit, account_id: str) -> None:
    """Rewrite the members of every backend of the account (fixture loads, after writing
    tunnels)."""
    backends = await unit.select(TunnelGroupBackend, f'"account_id" = {unit.mark}', [account_id])
    for backend in backends:
        await regroup_backend(unit, backend)


async def tunnels_of(unit: Unit, backend_id: str) -> list[str]:
    """The ids of the tunnels `backend_id` groups, oldest first."""
    found = await unit.exec(_TUNNELS_OF, {"backend_id": backend_id})
    return sorted(found.all())


async def backends_of(unit: Unit, tunnel_id: str) -> list[str]:
    """The ids of the backends that group `tunnel_id`, oldest first."""
    found = await unit.exec(_BACKENDS_OF, {"tunnel_id": tunnel_id})
    return sorted(found.all())


_DELETE_OF_BACKEND = Query(
    delete(TunnelGroupMember).where(TunnelGroupMember.backend_id == bindparam("backend_id"))  # type: ignore[arg-type]
)
_TUNNELS = Query(
    select(Tunnel.id, Tunnel.labels).where(Tunnel.account_id == bindparam("account_id"))  # type: ignore[call-overload]
)
_TUNNELS_OF = Query(
    select(TunnelGroupMember.tunnel_id).where(  # type: ignore[call-overload]
        TunnelGroupMember.backend_id == bindparam("backend_id")
    )
)
_BACKENDS_OF = Query(
    select(TunnelGroupMember.backend_id).where(  # type: ignore[call-overload]
        TunnelGroupMember.tunnel_id == bindparam("tunnel_id")
    )
)


async def partners_of(unit: Unit, side: str, ids: list[str]) -> dict[str, list[str]]:
    """For a page: the ids on the other side of the membership of each id of `side`
    (`"tunnel_id"` or `"backend_id"`), sorted, in one statement."""
    other = "backend_id" if side == "tunnel_id" else "tunnel_id"
    members = await unit.select_in(TunnelGroupMember, side, ids)
    partners: dict[str, list[str]] = {row_id: [] for row_id in ids}
    for member in sorted(members, key=lambda m: getattr(m, other)):
        partners[getattr(member, side)].append(getattr(member, other))
    return partners
