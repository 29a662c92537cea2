"""Vaults (`/vaults`): named containers of secrets, the name unique in the account (409
`ERR_VAULT_NAME_TAKEN`). A vault that holds secrets is not deleted (409 `ERR_VAULT_NOT_EMPTY`,
naming them); `GET /vaults/{id}/secrets` lists its secrets."""

from __future__ import annotations

from typing import Any

from tunnelgw.core import ids
from tunnelgw.core.errors import Code
from tunnelgw.models import Vault
from tunnelgw.services import crud, paging, vaults
from tunnelgw.services.auth import Caller
from tunnelgw.services.crud import Body


async def create(caller: Caller, body: Body = None) -> tuple[dict[str, Any], int]:
    body = body or {}
    name: str = body["name"]  # required by the schema
    caller = caller
    vault = Vault.new(
        id=ids.new_id(Vault.PREFIX),
        account_id=caller.account_id,
        name=name,
        created_by=caller.principal_id,
        last_updated_by=caller.principal_id,
    )
    vault.updated_at = vault.created_at
    crud.apply_patch(vault, body, crud.DESCRIBED_FIELDS)
    return (await vaults.create_vault(caller, vault)).to_api(), 201


async def update(caller: Caller, id: str, body: Body = None) -> dict[str, Any]:  # noqa: A002
    return (await vaults.update_vault(caller, id, body or {})).to_api()


async def list_secrets(
    caller: Caller,
    id: str,  # noqa: A002
    limit: int = paging.MAX_LIMIT,
    before_id: str | None = None,
    filter: str | None = None,  # noqa: A002
) -> dict[str, Any]:
    return await vaults.secrets_page(caller, id, limit, before_id, filter)


# The operations that are the shared CRUD ones (tunnelgw.services.crud.Resource); a secret's
# create share-locks its vault.
resource = crud.Resource(
    Vault,
    "vaults",
    in_use=crud.InUse(
        users=lambda unit, vault: vaults.secret_ids(unit, vault.id),
        code=Code.VAULT_NOT_EMPTY,
        message="The vault {row.id!r} holds the secret(s) {users}{more}; delete them first "
        "(DELETE /vault_secrets/{{id}}; GET /vaults/{row.id}/secrets lists them).",
        details={"id": "{row.id}", "secrets": "{listed}"},
        shown=vaults.SHOWN_SECRETS,
    ),
)
get, list, delete = resource.get, resource.list, resource.delete
