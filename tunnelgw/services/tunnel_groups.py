"""Tunnel group backends and the tunnels they group, stored: a backend's `labels` select the
account's tunnels (tunnelgw.models.tunnel_group_member keeps the selection), regrouped in the
unit that writes the backend; each side rendered with the other."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tunnelgw.models import Tunnel, TunnelGroupBackend
from tunnelgw.models.tunnel_group_member import (
    backends_of,
    partners_of,
    regroup_backend,
    tunnels_of,
)
from tunnelgw.services import crud, quotas
from tunnelgw.services.auth import Caller
from tunnelgw.storage import db
from tunnelgw.storage.unit import Unit


async def create(backend: TunnelGroupBackend) -> list[str]:
    """CREATE /backends/tunnel_group: `backend` admitted by its quota and inserted; the ids
    of the tunnels it groups."""
    async with db.write() as unit:
        await quotas.add(unit, backend)
        return await regroup_backend(unit, backend)


async def read(caller: Caller, id_: str) -> tuple[TunnelGroupBackend, list[str]]:
    """GET: the caller's backend and the ids of the tunnels it groups."""
    async with db.read() as unit:
        backend = await crud.get_owned(unit, TunnelGroupBackend, caller, id_)
        return backend, await tunnels_of(unit, backend.id)


async def update(
    caller: Caller, id_: str, body: dict[str, Any]
) -> tuple[TunnelGroupBackend, list[str]]:
    """PATCH: description, metadata and `labels` (`{}` and null change nothing; new labels
    regroup the tunnels); the backend and the ids of the tunnels it groups."""
    async with db.write() as unit:
        backend = await crud.get_managed(unit, TunnelGroupBackend, caller, id_, lock=True)
        crud.apply_patch(backend, body, crud.DESCRIBED_FIELDS)
        if body.get("labels"):
            backend.labels = dict(body["labels"])
            return backend, await regroup_backend(unit, backend)
        return backend, await tunnels_of(unit, backend.id)


async def with_tunnels(
    unit: Unit, rows: list[TunnelGroupBackend]
) -> Callable[[TunnelGroupBackend], dict[str, Any]]:
    """Renders a page's backends with their tunnels (read for the page at once)."""
    partners = await partners_of(unit, "backend_id", [row.id for row in rows])
    return lambda backend: backend.to_api(partners[backend.id])


async def read_tunnel(caller: Caller, id_: str) -> tuple[Tunnel, list[str]]:
    """GET /tunnels/{id}: the caller's tunnel and the ids of the backends grouping it."""
    async with db.read() as unit:
        tunnel = await crud.get_owned(unit, Tunnel, caller, id_)
        return tunnel, await backends_of(unit, tunnel.id)


async def with_backends(unit: Unit, rows: list[Tunnel]) -> Callable[[Tunnel], dict[str, Any]]:
    """Renders a page's tunnels with the backends grouping them (read for the page at once)."""
    partners = await partners_of(unit, "tunnel_id", [row.id for row in rows])
    return lambda tunnel: tunnel.to_api(partners[tunnel.id])
