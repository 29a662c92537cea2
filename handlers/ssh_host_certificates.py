"""SSH host certificates (`/ssh_host_certificates`): a host key signed by an SSH CA of the
account, for an SSH server to prove itself to clients that trust the CA.

Signed as user certificates are (tunnelgw.services.ssh_signing), as host certificates:
principals are host names or IP addresses, no critical options or extensions, a year's
default validity.
"""

from __future__ import annotations

from typing import Any

from tunnelgw.core import ids
from tunnelgw.models import SshHostCertificate
from tunnelgw.rules import hostnames
from tunnelgw.services import crud, ssh_signing
from tunnelgw.services.auth import Caller
from tunnelgw.services.crud import Body


def _checked(
    caller: Caller, body: dict[str, Any]
) -> tuple[SshHostCertificate, ssh_signing.Checked]:
    """The new (unsigned) row and its checked key and validity; ApiError(400) otherwise."""
    from tunnelgw.crypto import ssh

    request = ssh_signing.checked(body, ssh.DEFAULT_HOST_VALIDITY)
    cert = SshHostCertificate.new(
        id=ids.new_id(SshHostCertificate.PREFIX),
        account_id=caller.account_id,
        ssh_certificate_authority_id=body["ssh_certificate_authority_id"],
        public_key=request.key.line,
        key_type=request.key.key_type,
        principals=hostnames.ssh_host_principals(body.get("principals") or []),
        valid_after=request.valid_after,
        valid_until=request.valid_until,
        certificate="",
    )
    crud.apply_patch(cert, body, crud.DESCRIBED_FIELDS)
    return cert, request


async def create(caller: Caller, body: Body = None) -> tuple[dict[str, Any], int]:
    cert, request = _checked(caller, body or {})
    await ssh_signing.issue(caller, cert, request.key.key, host=True)
    return cert.to_api(), 201


# The operations that are the shared CRUD ones (tunnelgw.services.crud.Resource).
resource = crud.Resource(SshHostCertificate, "ssh_host_certificates")
get, list, update, delete = (
    resource.get,
    resource.list,
    resource.update,
    resource.delete,
)
