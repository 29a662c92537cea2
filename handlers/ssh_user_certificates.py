"""SSH user certificates (`/ssh_user_certificates`): spec section 4.6.

Create checks the request, then signs inside the write unit that reads the CA
(tunnelgw.services.ssh_signing, shared with host certificates).
"""

from __future__ import annotations

from typing import Any

from tunnelgw.core import ids
from tunnelgw.crypto import CryptoError
from tunnelgw.models import SshUserCertificate
from tunnelgw.services import crud, ssh_signing
from tunnelgw.services.auth import Caller
from tunnelgw.services.crud import Body

# tunnelgw.crypto.ssh (and cryptography, ~8 MiB) is imported by the functions that sign:
# a server that never signs does not load it.


def _checked(
    caller: Caller, body: dict[str, Any]
) -> tuple[SshUserCertificate, ssh_signing.Checked]:
    """The new (unsigned) row and its checked key and validity; ApiError(400) otherwise."""
    from tunnelgw.crypto import ssh

    request = ssh_signing.checked(body, ssh.DEFAULT_VALIDITY)
    try:
        options = ssh.critical_options(body.get("critical_options") or {})
    except CryptoError as exc:
        raise ssh_signing.crypto_error(exc) from None
    cert = SshUserCertificate.new(
        id=ids.new_id(SshUserCertificate.PREFIX),
        account_id=caller.account_id,
        ssh_certificate_authority_id=body["ssh_certificate_authority_id"],
        public_key=request.key.line,
        key_type=request.key.key_type,
        principals=[*(body.get("principals") or [])],
        critical_options=options,
        extensions=dict(body.get("extensions") or ssh.DEFAULT_EXTENSIONS),
        valid_after=request.valid_after,
        valid_until=request.valid_until,
        certificate="",
    )
    crud.apply_patch(cert, body, crud.DESCRIBED_FIELDS)
    return cert, request


async def create(caller: Caller, body: Body = None) -> tuple[dict[str, Any], int]:
    cert, request = _checked(caller, body or {})
    await ssh_signing.issue(
        caller,
        cert,
        request.key.key,
        host=False,
        critical_options=cert.critical_options,
        extensions=cert.extensions,
    )
    return cert.to_api(), 201


# The operations that are the shared CRUD ones (tunnelgw.services.crud.Resource).
resource = crud.Resource(SshUserCertificate, "ssh_user_certificates")
get, list, update, delete = (
    resource.get,
    resource.list,
    resource.update,
    resource.delete,
)
