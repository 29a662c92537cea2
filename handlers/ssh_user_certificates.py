"""SSH user certificates (`/ssh_user_certificates`): spec section 4.6.

Create checks the request, then signs inside the write unit that reads the CA (share-locked
on PostgreSQL), so a CA cannot be deleted between signing and storing the certificate.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from models import SshCertificateAuthority, SshUserCertificate
from tunnelgw.core import ids, timefmt
from tunnelgw.core.errors import ApiError, Code
from tunnelgw.crypto import CryptoError, keys
from tunnelgw.services import auth, crud, quotas
from tunnelgw.services.auth import Caller
from tunnelgw.services.crud import Body
from tunnelgw.storage import db
from tunnelgw.storage.unit import Unit

if TYPE_CHECKING:
    from tunnelgw.crypto import ssh

# tunnelgw.crypto.ssh (and cryptography, ~8 MiB) is imported by the functions that sign:
# a server that never signs does not load it.


def _checked(body: dict[str, Any]) -> tuple[SshUserCertificate, ssh.UserPublicKey]:
    """The new (unsigned) row and the key to certify; ApiError(400) for invalid input."""
    from tunnelgw.crypto import ssh

    try:
        user_key = ssh.parse_user_public_key(body["public_key"])
        options = ssh.critical_options(body.get("critical_options") or {})
        valid_after, valid_until = ssh.validity(
            body.get("valid_after"), body.get("valid_until"), timefmt.utcnow()
        )
    except CryptoError as exc:
        # Rule names are catalog code names (tests/unit/test_crypto_x509.py keeps them so).
        raise ApiError(Code[exc.rule.name], exc.msg, field=exc.field or "body") from None
    cert = SshUserCertificate.new(
        id=ids.new_id(SshUserCertificate.PREFIX),
        account_id=auth.caller().account_id,
        ssh_certificate_authority_id=body["ssh_certificate_authority_id"],
        public_key=user_key.line,
        key_type=user_key.key_type,
        principals=[*(body.get("principals") or [])],
        critical_options=options,
        extensions=dict(body.get("extensions") or ssh.DEFAULT_EXTENSIONS),
        valid_after=valid_after,
        valid_until=valid_until,
        certificate="",
    )
    crud.apply_patch(cert, body, crud.DESCRIBED_FIELDS)
    return cert, user_key


async def _signing_ca(unit: Unit, caller: Caller, ca_id: str) -> SshCertificateAuthority:
    """The caller's CA `ca_id`, share-locked against a concurrent delete; 404 otherwise."""
    return await crud.get_reference(
        unit,
        SshCertificateAuthority,
        caller,
        ca_id,
        "ssh_certificate_authority_id",
        lock="share",
    )


def _private_key(ca: SshCertificateAuthority) -> ssh.CaPrivateKey:
    from tunnelgw.crypto import ssh

    try:
        der = keys.unwrap(keys.current(), ca.wrapped_private_key, ca.id.encode("ascii"))
    except keys.UnwrapError:
        # A server bug or configuration error, not bad input: logged as a 500.
        raise ApiError(
            Code.INTERNAL,
            f"The private key of {ca.id!r} does not decrypt with this server's "
            "key-encryption key (TUNNELGW_KEY_ENCRYPTION_KEY).",
        ) from None
    return ssh.load_ca_key(der)


async def create(body: Body = None) -> tuple[dict[str, Any], int]:
    from tunnelgw.crypto import ssh

    cert, user_key = _checked(body or {})
    request = ssh.CertificateRequest(
        key_id=cert.id,
        serial=ssh.new_serial(),
        principals=cert.principals,
        critical_options=cert.critical_options,
        extensions=cert.extensions,
        valid_after=cert.valid_after,
        valid_until=cert.valid_until,
    )
    async with db.write() as unit:
        ca = await _signing_ca(unit, auth.caller(), cert.ssh_certificate_authority_id)
        cert.certificate = await asyncio.to_thread(
            ssh.sign_user_certificate, _private_key(ca), user_key.key, request
        )
        await quotas.add(unit, cert)
    return cert.to_api(), 201


# The operations that are the shared CRUD ones (tunnelgw.services.crud.Resource).
resource = crud.Resource(SshUserCertificate, "ssh_user_certificates")
get, list, update, delete = (
    resource.get,
    resource.list,
    resource.update,
    resource.delete,
)
