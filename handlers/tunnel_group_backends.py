"""Tunnel group backends (`/backends/tunnel_group`): `labels` select the account's tunnels
(tunnelgw.models.tunnel_group_member keeps the selection); a backend that an edge or route module
uses cannot be deleted (409). On update, `labels: {}` changes nothing (the Python client sends it
with every update)."""

from __future__ import annotations

from typing import Any

from tunnelgw.core import ids
from tunnelgw.core.errors import Code
from tunnelgw.models import TunnelGroupBackend
from tunnelgw.models.tunnel_group_backend import modules_using
from tunnelgw.services import crud, tunnel_groups
from tunnelgw.services.auth import Caller
from tunnelgw.services.crud import Body


async def create(caller: Caller, body: Body = None) -> tuple[dict[str, Any], int]:
    body = body or {}
    backend = TunnelGroupBackend.new(
        id=ids.new_id(TunnelGroupBackend.PREFIX),
        account_id=caller.account_id,
        labels=dict(body.get("labels") or {}),
    )
    crud.apply_patch(backend, body, crud.DESCRIBED_FIELDS)
    return backend.to_api(await tunnel_groups.create(backend)), 201


async def get(caller: Caller, id: str) -> dict[str, Any]:  # noqa: A002 - the spec's parameter name
    backend, tunnels = await tunnel_groups.read(caller, id)
    return backend.to_api(tunnels)


async def update(caller: Caller, id: str, body: Body = None) -> dict[str, Any]:  # noqa: A002
    backend, tunnels = await tunnel_groups.update(caller, id, body or {})
    return backend.to_api(tunnels)


# The operations that are the shared CRUD ones (tunnelgw.services.crud.Resource); the
# modules share-lock the backend they name, so none names it between the guard's check and
# the delete.
resource = crud.Resource(
    TunnelGroupBackend,
    "backends",
    renderer=tunnel_groups.with_tunnels,
    in_use=crud.InUse(
        users=lambda unit, backend: modules_using(unit, backend.id),
        code=Code.BACKEND_IN_USE,
        message="The tunnel group backend {row.id!r} is the backend of an edge or route "
        "module; remove the module first (DELETE /edges/tls/{{id}}/backend for a TLS edge).",
        details={"id": "{row.id}"},
    ),
)
list, delete = resource.list, resource.delete
