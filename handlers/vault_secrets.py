"""Secrets (`/vault_secrets`) of vaults: the vault named by `vault_id` or `vault_name`, the name
unique in it (409 `ERR_SECRET_NAME_TAKEN`). The `value` is write-only: stored encrypted under
the key-encryption key, never returned, not a field list filters know."""

from __future__ import annotations

from typing import Any

from tunnelgw.core import ids, timefmt
from tunnelgw.core.errors import ApiError, Code
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


# The operations that are the shared CRUD ones (tunnelgw.services.crud.Resource).
resource = crud.Resource(VaultSecret, "secrets")
get, list = resource.get, resource.list


async def delete(id: str) -> tuple[None, int]:  # noqa: A002 - the spec's parameter name
    """409 ERR_SECRET_IN_USE while a cloud endpoint's traffic policy reads the secret."""
    caller = auth.caller()
    async with db.write() as unit:
        # Locked first: a cloud endpoint create or update naming it share-locks it.
        secret = await crud.get_managed(unit, VaultSecret, caller, id, lock=True)
        vault = await crud.get_owned(unit, Vault, caller, secret.vault_id)
        users = await cloud_endpoints.using_secret(unit, caller.account_id, vault.name, secret.name)
        if users:
            raise ApiError(
                Code.SECRET_IN_USE,
                f"The traffic policies of the cloud endpoint(s) {', '.join(users)} read "
                f'secrets.get("{vault.name}", "{secret.name}"); change or delete them first.',
                endpoints=", ".join(users),
            )
        await unit.delete(secret)
    return None, 204
