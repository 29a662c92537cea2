"""SSH credentials (`/ssh_credentials`): SSH public keys that start tunnels through an SSH
gateway. The key is checked as an SSH user certificate's is (tunnelgw.crypto.ssh), stored as
sent and never changes. Owned resources with ACL rules, as tunnel credentials
(tunnelgw.handlers.credentials)."""

from __future__ import annotations

from typing import Any

from tunnelgw.core import ids
from tunnelgw.core.errors import ApiError, Code
from tunnelgw.crypto import CryptoError
from tunnelgw.models import SshCredential
from tunnelgw.rules import acls
from tunnelgw.services import crud
from tunnelgw.services.auth import Caller
from tunnelgw.services.crud import Body


def _checked_key(text: str) -> str:
    """`text` when it is an SSH public key an SSH user certificate could certify; ApiError
    (400) with the same catalog codes otherwise."""
    from tunnelgw.crypto import ssh  # cryptography (~8 MiB): loaded at first use

    try:
        ssh.parse_user_public_key(text)
    except CryptoError as exc:
        # Rule names are catalog code names (tests/unit/test_crypto_x509.py keeps them so).
        raise ApiError(Code[exc.rule.name], exc.msg, field=exc.field or "public_key") from None
    return text


async def create(caller: Caller, body: Body = None) -> tuple[dict[str, Any], int]:
    body = body or {}
    caller = caller
    public_key = _checked_key(body["public_key"])
    acl = acls.checked(body.get("acl"))

    def build(owner_id: str) -> SshCredential:
        credential = SshCredential.new(
            id=ids.new_id(SshCredential.PREFIX),
            account_id=caller.account_id,
            owner_id=owner_id,
            public_key=public_key,
            acl=acl,
        )
        crud.apply_patch(credential, body, crud.DESCRIBED_FIELDS)
        return credential

    return (await crud.add_owned(caller, body.get("owner_id"), build)).to_api(), 201


async def update(caller: Caller, id: str, body: Body = None) -> dict[str, Any]:  # noqa: A002
    body = body or {}
    acl = acls.checked(body["acl"]) if body.get("acl") is not None else None

    def change(credential: SshCredential) -> None:
        crud.apply_patch(credential, body, crud.DESCRIBED_FIELDS)
        if acl is not None:
            credential.acl = acl

    return await crud.update_one(caller, SshCredential, id, change)


# The operations that are the shared CRUD ones (tunnelgw.services.crud.Resource); delete
# applies the ownership rule to the owned model (crud.get_managed).
resource = crud.Resource(SshCredential, "ssh_credentials")
get, list, delete = resource.get, resource.list, resource.delete
