"""Tunnel group backends (`/backends/tunnel_group`): `labels` select the account's tunnels
(tunnelgw.models.tunnel_group_member keeps the selection); a backend that an edge or route module
uses cannot be deleted (409). On update, `labels: {}` changes nothing (the Python client sends it
with every update)."""

from __future__ import annotations

import builtins
from collections.abc import Callable
from typing import Any

from tunnelgw.core import ids
from tunnelgw.core.errors import Code
from tunnelgw.models import TunnelGroupBackend
from tunnelgw.models.tunnel_group_backend import modules_using
from tunnelgw.models.tunnel_group_member import partners_of, regroup_backend, tunnels_of
from tunnelgw.services import auth, crud, quotas
from tunnelgw.services.crud import Body
from tunnelgw.storage import db
from tunnelgw.storage.unit import Unit


async def create(body: Body = None) -> tuple[dict[str, Any], int]:
    body = body or {}
    backend = TunnelGroupBackend.new(
        id=ids.new_id(TunnelGroupBackend.PREFIX),
        account_id=auth.caller().account_id,
        labels=dict(body.get("labels") or {}),
    )
    crud.apply_patch(backend, body, crud.DESCRIBED_FIELDS)
    async with db.write() as unit:
        await quotas.add(unit, backend)
        tunnels = await regroup_backend(unit, backend)
    return backend.to_api(tunnels), 201


async def get(id: str) -> dict[str, Any]:  # noqa: A002 - the spec's parameter name
    async with db.read() as unit:
        backend = await crud.get_owned(unit, TunnelGroupBackend, auth.caller(), id)
        return backend.to_api(await tunnels_of(unit, backend.id))


async def _with_tunnels(
    unit: Unit, rows: builtins.list[TunnelGroupBackend]
) -> Callable[[TunnelGroupBackend], dict[str, Any]]:
    """Renders the page's backends with their tunnels (read for the page at once)."""
    partners = await partners_of(unit, "backend_id", [row.id for row in rows])
    return lambda backend: backend.to_api(partners[backend.id])


async def update(id: str, body: Body = None) -> dict[str, Any]:  # noqa: A002
    body = body or {}
    async with db.write() as unit:
        backend = await crud.get_managed(unit, TunnelGroupBackend, auth.caller(), id, lock=True)
        crud.apply_patch(backend, body, crud.DESCRIBED_FIELDS)
        if body.get("labels"):  # {} and null change nothing
            backend.labels = dict(body["labels"])
            tunnels = await regroup_backend(unit, backend)
        else:
            tunnels = await tunnels_of(unit, backend.id)
    return backend.to_api(tunnels)


# The operations that are the shared CRUD ones (tunnelgw.services.crud.Resource); the
# modules share-lock the backend they name, so none names it between the guard's check and
# the delete.
resource = crud.Resource(
    TunnelGroupBackend,
    "backends",
    renderer=_with_tunnels,
    in_use=crud.InUse(
        users=lambda unit, backend: modules_using(unit, backend.id),
        code=Code.BACKEND_IN_USE,
        message="The tunnel group backend {row.id!r} is the backend of an edge or route "
        "module; remove the module first (DELETE /edges/tls/{{id}}/backend for a TLS edge).",
        details={"id": "{row.id}"},
    ),
)
list, delete = resource.list, resource.delete
