"""Tunnels (`/tunnels`): read-only (agents start tunnels; rows come from fixtures). Each shows
the tunnel group backends it serves (tunnelgw.models.tunnel_group_member)."""

from __future__ import annotations

from typing import Any

from tunnelgw.models import Tunnel
from tunnelgw.services import crud, tunnel_groups
from tunnelgw.services.auth import Caller


async def get(caller: Caller, id: str) -> dict[str, Any]:  # noqa: A002 - the spec's parameter name
    tunnel, backends = await tunnel_groups.read_tunnel(caller, id)
    return tunnel.to_api(backends)


# The operations that are the shared CRUD ones (tunnelgw.services.crud.Resource).
resource = crud.Resource(Tunnel, "tunnels", renderer=tunnel_groups.with_backends)
list = resource.list
