"""Tunnel credentials (`/credentials`): agent authtokens. The token is shown once, in the
create response; only its SHA-256 is stored. Owned resources (tunnelgw.services.ownership),
with ACL rules (tunnelgw.rules.acls): on update `acl` replaces the rules, `[]` removes them
all, null or absent keeps them."""

from __future__ import annotations

from typing import Any

from tunnelgw.core import ids
from tunnelgw.models import Credential
from tunnelgw.rules import acls
from tunnelgw.services import auth, crud
from tunnelgw.services.auth import Caller
from tunnelgw.services.crud import Body

TOKEN_PREFIX = "tgwcr_"  # noqa: S105 - a public prefix (not an API key's `tgw_`), not a secret


async def create(caller: Caller, body: Body = None) -> tuple[dict[str, Any], int]:
    body = body or {}
    caller = caller
    acl = acls.checked(body.get("acl"))
    token = TOKEN_PREFIX + ids.new_secret()

    def build(owner_id: str) -> Credential:
        credential = Credential.new(
            id=ids.new_id(Credential.PREFIX),
            account_id=caller.account_id,
            owner_id=owner_id,
            token_hash=auth.hash_token(token),
            acl=acl,
        )
        crud.apply_patch(credential, body, crud.DESCRIBED_FIELDS)
        return credential

    credential = await crud.add_owned(caller, body.get("owner_id"), build)
    return credential.to_api(token=token), 201


async def update(caller: Caller, id: str, body: Body = None) -> dict[str, Any]:  # noqa: A002
    body = body or {}
    acl = acls.checked(body["acl"]) if body.get("acl") is not None else None

    def change(credential: Credential) -> None:
        crud.apply_patch(credential, body, crud.DESCRIBED_FIELDS)
        if acl is not None:
            credential.acl = acl

    return await crud.update_one(caller, Credential, id, change)


# The operations that are the shared CRUD ones (tunnelgw.services.crud.Resource); delete
# applies the ownership rule to the owned model (crud.get_managed).
resource = crud.Resource(Credential, "credentials")
get, list, delete = resource.get, resource.list, resource.delete
