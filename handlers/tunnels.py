"""Tunnels (`/tunnels`): read-only (agents start tunnels; rows come from fixtures). Each shows
the tunnel group backends it serves (tunnelgw.models.tunnel_group_member)."""

from __future__ import annotations

import builtins
from collections.abc import Callable
from typing import Any

from tunnelgw.models import Tunnel
from tunnelgw.models.tunnel_group_member import backends_of, partners_of
from tunnelgw.services import auth, crud
from tunnelgw.storage import db
from tunnelgw.storage.unit import Unit


async def get(id: str) -> dict[str, Any]:  # noqa: A002 - the spec's parameter name
    async with db.read() as unit:
        tunnel = await crud.get_owned(unit, Tunnel, auth.caller(), id)
        return tunnel.to_api(await backends_of(unit, tunnel.id))


async def _with_backends(
    unit: Unit, rows: builtins.list[Tunnel]
) -> Callable[[Tunnel], dict[str, Any]]:
    """Renders the page's tunnels with the backends grouping them (read for the page at once)."""
    partners = await partners_of(unit, "tunnel_id", [row.id for row in rows])
    return lambda tunnel: tunnel.to_api(partners[tunnel.id])


# The operations that are the shared CRUD ones (tunnelgw.services.crud.Resource).
resource = crud.Resource(Tunnel, "tunnels", renderer=_with_backends)
list = resource.list
