"""SSH certificate authorities (`/ssh_certificate_authorities`): spec section 4.5.

The key pair is generated here; the private key is stored wrapped under the KEK and never
returned. A CA whose user or host certificates have not all expired cannot be deleted (409).
"""

from __future__ import annotations

import asyncio
from typing import Any

from tunnelgw.core import ids
from tunnelgw.core.errors import ApiError, Code
from tunnelgw.crypto import CryptoError, keys
from tunnelgw.models import SshCertificateAuthority
from tunnelgw.services import crud, ssh_signing
from tunnelgw.services.auth import Caller
from tunnelgw.services.crud import Body

# tunnelgw.crypto.ssh (and cryptography, ~8 MiB) is imported by the functions that make keys:
# a server that never makes an SSH CA does not load it.


async def create(caller: Caller, body: Body = None) -> tuple[dict[str, Any], int]:
    from tunnelgw.crypto import ssh

    body = body or {}
    try:
        spec = ssh.ca_key_spec(
            body.get("private_key_type"), body.get("elliptic_curve"), body.get("key_size")
        )
    except CryptoError as exc:
        raise ApiError(Code[exc.rule.name], exc.msg, field=exc.field or "body") from None
    account_id = caller.account_id
    # An RSA 4096 key takes about half a second: keep the event loop free meanwhile.
    key = await asyncio.to_thread(ssh.generate_ca_key, spec)
    ca_id = ids.new_id(SshCertificateAuthority.PREFIX)
    ca = SshCertificateAuthority.new(
        id=ca_id,
        account_id=account_id,
        public_key=ssh.public_key_line(key.public_key()),
        key_type=spec.key_type,
        wrapped_private_key=keys.wrap(
            keys.current(), ssh.private_key_bytes(key), ca_id.encode("ascii")
        ),
    )
    crud.apply_patch(ca, body, crud.DESCRIBED_FIELDS)
    return (await crud.add(ca)).to_api(), 201


# The operations that are the shared CRUD ones (tunnelgw.services.crud.Resource); signing
# share-locks the CA, so no certificate is signed between the guard's check and the delete.
resource = crud.Resource(
    SshCertificateAuthority,
    "ssh_certificate_authorities",
    in_use=crud.InUse(
        users=ssh_signing.unexpired,
        code=Code.SSH_CA_IN_USE,
        message="The SSH certificate authority {row.id!r} signed user or host certificates "
        "that have not expired; delete them first.",
        details={"id": "{row.id}"},
    ),
)
get, list = resource.get, resource.list
update, delete = resource.update, resource.delete
