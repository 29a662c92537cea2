"""Secrets (`/vault_secrets`) of vaults: the vault named by `vault_id` or `vault_name`, the name
unique in it (409 `ERR_SECRET_NAME_TAKEN`). The `value` is write-only: stored encrypted under
the key-encryption key, never returned, not a field list filters know."""

from __future__ import annotations

from typing import Any

from tunnelgw.core import ids, timefmt
from tunnelgw.core.errors import Code
from tunnelgw.models import Vault, VaultSecret
from tunnelgw.services import auth, cloud_endpoints, crud, quotas, vaults
from tunnelgw.services.crud import Body
from tunnelgw.storage import db


async def create(body: Body = None) -> tuple[dict[str, Any], int]:
    body = body or {}
    name: str = body["name"]  # name and value are required by the schema
    value: str = body["value"]
    caller = auth.caller()
    secret_id = ids.new_id(VaultSecret.PREFIX)
    async with db.write() as unit:
        vault = await vaults.vault_for_new_secret(unit, caller, body)
        await quotas.admit(unit, VaultSecret, caller.account_id)
        await vaults.check_secret_name(unit, vault, name)
        secret = VaultSecret.new(
            id=secret_id,
            account_id=caller.account_id,
            vault_id=vault.id,
            vault_name=vault.name,
            name=name,
            wrapped_value=vaults.wrap_value(secret_id, value),
            created_by=caller.principal_id,
            last_updated_by=caller.principal_id,
        )
        secret.updated_at = secret.created_at
        crud.apply_patch(secret, body, crud.DESCRIBED_FIELDS)
        unit.add(secret)
    return secret.to_api(), 201


async def update(id: str, body: Body = None) -> dict[str, Any]:  # noqa: A002
    body = body or {}
    caller = auth.caller()
    async with db.write() as unit:
        secret = await crud.get_managed(unit, VaultSecret, caller, id, lock=True)
        name, value = body.get("name"), body.get("value")
        if name is not None and name != secret.name:
            vault = await crud.get_owned(unit, Vault, caller, secret.vault_id)
            await vaults.check_secret_name(unit, vault, name, secret.id)
            secret.name = name
        if value is not None:
            secret.wrapped_value = vaults.wrap_value(secret.id, value)
        crud.apply_patch(secret, body, crud.DESCRIBED_FIELDS)
        secret.updated_at = timefmt.utcnow()
        secret.last_updated_by = caller.principal_id
    return secret.to_api()


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
