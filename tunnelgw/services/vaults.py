"""Vaults and their secrets: names (unique in the account, in the vault), which vault a new
secret goes to, a secret's value sealed under the key-encryption key, one vault's secrets as a
list, vaults and secrets created and changed in one unit each, and `find_secret`, how a
traffic policy's `secrets.get("vault", "name")` is resolved."""

from __future__ import annotations

from typing import Any

from sqlalchemy import bindparam, update
from sqlmodel import col

from tunnelgw.core import ids, timefmt
from tunnelgw.core.errors import ApiError, Code
from tunnelgw.crypto import keys
from tunnelgw.models import Vault, VaultSecret
from tunnelgw.services import crud, listing, paging, quotas
from tunnelgw.services.auth import Caller
from tunnelgw.storage import db
from tunnelgw.storage.statements import Query
from tunnelgw.storage.unit import Lock, Unit

# A vault's secrets listed in the details of a refused vault delete, at most.
SHOWN_SECRETS = 20
# Row locks of `vault_named` on PostgreSQL (SQLite's write units are exclusive anyway).
_LOCKS = {False: "", True: " FOR UPDATE", "share": " FOR SHARE"}


async def vault_named(
    unit: Unit, account_id: str, name: str, *, lock: Lock = False
) -> Vault | None:
    """The account's vault called `name`, or None; `lock` as for Unit.get."""
    m = unit.mark
    locked = _LOCKS[lock] if unit.dialect == "postgresql" else ""
    condition = f'"account_id" = {m} AND "name" = {m}{locked}'
    found = await unit.select(Vault, condition, [account_id, name])
    return found[0] if found else None


async def secret_named(unit: Unit, vault_id: str, name: str) -> VaultSecret | None:
    """The secret called `name` in the vault `vault_id`, or None."""
    m = unit.mark
    found = await unit.select(VaultSecret, f'"vault_id" = {m} AND "name" = {m}', [vault_id, name])
    return found[0] if found else None


async def find_secret(
    unit: Unit, account_id: str, vault_name: str, secret_name: str
) -> VaultSecret | None:
    """The secret a traffic policy names with `secrets.get(vault_name, secret_name)`: the one
    called `secret_name` in the account's vault called `vault_name`; None when either is
    absent."""
    vault = await vault_named(unit, account_id, vault_name)
    return None if vault is None else await secret_named(unit, vault.id, secret_name)


async def check_vault_name(unit: Unit, account_id: str, name: str, own_id: str = "") -> None:
    """ApiError(409 ERR_VAULT_NAME_TAKEN) when another vault of the account is called `name`."""
    other = await vault_named(unit, account_id, name)
    if other is not None and other.id != own_id:
        raise ApiError(
            Code.VAULT_NAME_TAKEN,
            f"The vault {other.id} is already called {name!r}; choose another name.",
            field="name",
            id=other.id,
        )


async def check_secret_name(unit: Unit, vault: Vault, name: str, own_id: str = "") -> None:
    """ApiError(409 ERR_SECRET_NAME_TAKEN) when another secret of `vault` is called `name`."""
    other = await secret_named(unit, vault.id, name)
    if other is not None and other.id != own_id:
        raise ApiError(
            Code.SECRET_NAME_TAKEN,
            f"The vault {vault.name!r} already has a secret called {name!r} ({other.id}); "
            "choose another name, or update that secret.",
            field="name",
            id=other.id,
        )


def requested_vault(body: dict[str, Any]) -> tuple[str, str]:
    """The `vault_id` and `vault_name` of a new secret's body, `""` when unset (null, absent
    or `""`: the platform's clients send both, the one not given empty); ApiError(400
    ERR_MISSING_FIELD) when neither is set. The spec's `x-check: vault-secret-vault`."""
    vault_id, vault_name = body.get("vault_id") or "", body.get("vault_name") or ""
    if not vault_id and not vault_name:
        raise ApiError(
            Code.MISSING_FIELD,
            "Name the vault the secret goes to: vault_id (vault_...) or vault_name.",
            field="vault_id",
        )
    return vault_id, vault_name


async def vault_for_new_secret(unit: Unit, caller: Caller, body: dict[str, Any]) -> Vault:
    """The vault a new secret goes to (`requested_vault`); both may be given when they name
    the same vault, else ApiError(400 ERR_CONFLICTING_FIELDS). Share-locked, so the vault is
    not deleted before the secret is in it."""
    vault_id, vault_name = requested_vault(body)
    if vault_id:
        vault = await crud.get_reference(unit, Vault, caller, vault_id, "vault_id", lock="share")
    else:
        found = await vault_named(unit, caller.account_id, vault_name, lock="share")
        if found is None:
            raise ApiError(
                Code.REFERENCE_NOT_FOUND,
                f"The account has no vault called {vault_name!r}; create it (POST /vaults).",
                context={"name": vault_name},
                field="vault_name",
            )
        vault = found
    if vault_name and vault.name != vault_name:
        raise ApiError(
            Code.CONFLICTING_FIELDS,
            f"vault_id names the vault {vault.name!r}, vault_name {vault_name!r}; give one of "
            "them, or both naming the same vault.",
            field="vault_name",
        )
    return vault


_RENAME = Query(
    update(VaultSecret)
    .where(col(VaultSecret.vault_id) == bindparam("vault_id"))
    .values(vault_name=bindparam("vault_name"))
)


async def rename_vault(unit: Unit, vault: Vault, name: str) -> None:
    """Give `vault` the name `name` (checked free), its secrets' `vault_name` with it."""
    await check_vault_name(unit, vault.account_id, name, vault.id)
    vault.name = name
    await unit.exec(_RENAME, {"vault_id": vault.id, "vault_name": name})


async def secrets_in(unit: Unit, vault_id: str, start: str | None, count: int) -> list[Any]:
    """Up to `count` secrets of the vault older than `start` (None: from the newest), newest
    first: keyset on the (vault_id, id) index."""
    m = unit.mark
    condition, args = f'"vault_id" = {m}', [vault_id]
    if start is not None:
        condition, args = f'{condition} AND "id" < {m}', [vault_id, start]
    return await unit.select(
        VaultSecret, f'{condition} ORDER BY "id" DESC LIMIT {m}', [*args, count]
    )


async def secrets_page(
    caller: Caller, vault_id: str, limit: int, before_id: str | None, expression: str | None
) -> dict[str, Any]:
    """GET /vaults/{id}/secrets: a page of the caller's vault's secrets, newest first, those
    matching `expression` when given (as on every list); 404 for another account's vault."""
    path = f"{Vault.PATH}/{vault_id}/secrets"
    start = paging.cursor(VaultSecret.PREFIX, before_id)
    async with db.read() as unit:
        vault = await crud.get_owned(unit, Vault, caller, vault_id)
        if expression is None:
            rows = await secrets_in(unit, vault.id, start, limit + 1)
            return paging.envelope("secrets", path, rows[:limit], limit, more=len(rows) > limit)

    async def fetch(unit: Unit, cursor: str | None, count: int) -> list[Any]:
        return await secrets_in(unit, vault.id, cursor, count)

    return await listing.read_filtered(
        caller, VaultSecret, "secrets", limit, before_id, expression, path=path, fetch=fetch
    )


async def secret_ids(unit: Unit, vault_id: str) -> list[str]:
    """The ids of the vault's newest secrets (at most SHOWN_SECRETS + 1: more than shown)."""
    return [row.id for row in await secrets_in(unit, vault_id, None, SHOWN_SECRETS + 1)]


def wrap_value(secret_id: str, value: str) -> bytes:
    """`value` encrypted under the key-encryption key, bound to the secret `secret_id`."""
    return keys.wrap(keys.current(), value.encode("utf-8"), secret_id.encode("ascii"))


def reveal(secret: VaultSecret) -> str:
    """The value of `secret` (for the server's own use, e.g. a traffic policy; never an API
    response). Raises tunnelgw.crypto.keys.UnwrapError under another key-encryption key."""
    return keys.unwrap(keys.current(), secret.wrapped_value, secret.id.encode("ascii")).decode()


async def create_vault(caller: Caller, vault: Vault) -> Vault:
    """CREATE /vaults: `vault` admitted by its quota and inserted (409 ERR_VAULT_NAME_TAKEN
    when the account has a vault of its name)."""
    async with db.write() as unit:
        # The quota's account lock first: creates of one account then check names in turn.
        await quotas.admit(unit, Vault, caller.account_id)
        await check_vault_name(unit, caller.account_id, vault.name)
        unit.add(vault)
    return vault


async def update_vault(caller: Caller, id_: str, body: dict[str, Any]) -> Vault:
    """PATCH /vaults/{id}: name (`rename_vault`), description and metadata."""
    async with db.write() as unit:
        vault = await crud.get_managed(unit, Vault, caller, id_, lock=True)
        name = body.get("name")
        if name is not None and name != vault.name:
            await rename_vault(unit, vault, name)
        crud.apply_patch(vault, body, crud.DESCRIBED_FIELDS)
        vault.updated_at = timefmt.utcnow()
        vault.last_updated_by = caller.principal_id
    return vault


async def create_secret(caller: Caller, body: dict[str, Any]) -> VaultSecret:
    """CREATE /vault_secrets: the body's secret in the vault it names
    (`vault_for_new_secret`), its name free there (409 ERR_SECRET_NAME_TAKEN), its value
    sealed."""
    name: str = body["name"]  # name and value are required by the schema
    value: str = body["value"]
    secret_id = ids.new_id(VaultSecret.PREFIX)
    async with db.write() as unit:
        vault = await vault_for_new_secret(unit, caller, body)
        await quotas.admit(unit, VaultSecret, caller.account_id)
        await check_secret_name(unit, vault, name)
        secret = VaultSecret.new(
            id=secret_id,
            account_id=caller.account_id,
            vault_id=vault.id,
            vault_name=vault.name,
            name=name,
            wrapped_value=wrap_value(secret_id, value),
            created_by=caller.principal_id,
            last_updated_by=caller.principal_id,
        )
        secret.updated_at = secret.created_at
        crud.apply_patch(secret, body, crud.DESCRIBED_FIELDS)
        unit.add(secret)
    return secret


async def update_secret(caller: Caller, id_: str, body: dict[str, Any]) -> VaultSecret:
    """PATCH /vault_secrets/{id}: name (free in its vault), value, description, metadata."""
    async with db.write() as unit:
        secret = await crud.get_managed(unit, VaultSecret, caller, id_, lock=True)
        name, value = body.get("name"), body.get("value")
        if name is not None and name != secret.name:
            vault = await crud.get_owned(unit, Vault, caller, secret.vault_id)
            await check_secret_name(unit, vault, name, secret.id)
            secret.name = name
        if value is not None:
            secret.wrapped_value = wrap_value(secret.id, value)
        crud.apply_patch(secret, body, crud.DESCRIBED_FIELDS)
        secret.updated_at = timefmt.utcnow()
        secret.last_updated_by = caller.principal_id
    return secret
