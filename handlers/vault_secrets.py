"""Secrets (`/vault_secrets`) of vaults: the vault named by `vault_id` or `vault_name`, the name
unique in it (409 `ERR_SECRET_NAME_TAKEN`). The `value` is write-only: stored encrypted under
the key-encryption key, never returned, not a field list filters know."""

from __future__ import annotations

from typing import Any

from tunnelgw.core.errors import Code
from tunnelgw.models import VaultSecret
from tunnelgw.services import cloud_endpoints, crud, vaults
from tunnelgw.services.auth import Caller
from tunnelgw.services.crud import Body


async def create(caller: Caller, body: Body = None) -> tuple[dict[str, Any], int]:
    return (await vaults.create_secret(caller, body or {})).to_api(), 201


async def update(caller: Caller, id: str, body: Body = None) -> dict[str, Any]:  # noqa: A002
    return (await vaults.update_secret(caller, id, body or {})).to_api()


# The operations that are the shared CRUD ones (tunnelgw.services.crud.Resource); a cloud
# endpoint create or update naming a secret share-locks it, and a secret whose value a
# traffic policy reads is not deleted.
resource = crud.Resource(
    VaultSecret,
    "secrets",
    in_use=crud.InUse(
        users=lambda unit, secret: cloud_endpoints.using_secret(
            unit, secret.account_id, secret.vault_name, secret.name
        ),
        code=Code.SECRET_IN_USE,
        message="The traffic policies of the cloud endpoint(s) {users} read "
        'secrets.get("{row.vault_name}", "{row.name}"); change or delete them first.',
        details={"endpoints": "{users}"},
    ),
)
get, list, delete = resource.get, resource.list, resource.delete
