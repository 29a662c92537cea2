"""Signing SSH user and host certificates with an SSH certificate authority of the account.

One path for both kinds: the request's key and validity are checked (400 with the crypto
rule's code), then the certificate is signed inside the write unit that reads the CA
(share-locked on PostgreSQL), so a CA cannot be deleted between signing and storing.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from tunnelgw.core import timefmt
from tunnelgw.core.errors import ApiError, Code
from tunnelgw.crypto import CryptoError, keys
from tunnelgw.models import (
    SshCertificateAuthority,
    SshHostCertificate,
    SshUserCertificate,
    ssh_host_certificate,
    ssh_user_certificate,
)
from tunnelgw.services import crud, quotas
from tunnelgw.services.auth import Caller
from tunnelgw.storage import db
from tunnelgw.storage.unit import Unit

if TYPE_CHECKING:
    from tunnelgw.crypto import ssh

# tunnelgw.crypto.ssh (and cryptography, ~8 MiB) is imported by the functions that sign:
# a server that never signs does not load it.

SshCertificate = SshUserCertificate | SshHostCertificate


@dataclass(frozen=True, slots=True)
class Checked:
    """A certificate request's checked parts: the key to certify and the validity period."""

    key: ssh.UserPublicKey
    valid_after: datetime
    valid_until: datetime


def crypto_error(exc: CryptoError) -> ApiError:
    """The API error of a failed crypto check (rule names are catalog code names)."""
    return ApiError(Code[exc.rule.name], exc.msg, field=exc.field or "body")


def checked(body: dict[str, Any], default_validity: timedelta) -> Checked:
    """The key and validity of a create body; ApiError(400) for invalid input. An unset
    `valid_until` is `valid_after` + `default_validity`."""
    from tunnelgw.crypto import ssh

    try:
        key = ssh.parse_user_public_key(body["public_key"])
        after, until = ssh.validity(
            body.get("valid_after"), body.get("valid_until"), timefmt.utcnow(), default_validity
        )
    except CryptoError as exc:
        raise crypto_error(exc) from None
    return Checked(key, after, until)


def _private_key(ca: SshCertificateAuthority) -> ssh.CaPrivateKey:
    from tunnelgw.crypto import ssh

    if ca.wrapped_private_key == b"":  # left out of the snapshot the CA was loaded from
        raise ApiError(
            Code.SECRET_LEFT_OUT,
            f"The SSH certificate authority {ca.id!r} was loaded from a snapshot without its "
            "private key, so it cannot sign; create a new CA, or load a snapshot taken with "
            "include_secrets.",
            id=ca.id,
            field="wrapped_private_key",
        )
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


async def issue(
    caller: Caller,
    cert: SshCertificate,
    key: ssh.UserKey,
    *,
    host: bool,
    critical_options: Mapping[str, str] | None = None,
    extensions: Mapping[str, str] | None = None,
) -> SshCertificate:
    """CREATE: `cert` signed (`_sign`), admitted by its quota and inserted, in one unit."""
    async with db.write() as unit:
        await _sign(
            unit,
            caller,
            cert,
            key,
            host=host,
            critical_options=critical_options,
            extensions=extensions,
        )
        await quotas.add(unit, cert)
    return cert


async def _sign(
    unit: Unit,
    caller: Caller,
    cert: SshCertificate,
    key: ssh.UserKey,
    *,
    host: bool,
    critical_options: Mapping[str, str] | None,
    extensions: Mapping[str, str] | None,
) -> None:
    """Sign `cert` (its `certificate` is set) with the caller's CA it names, share-locked
    against a concurrent delete: 404 ERR_REFERENCE_NOT_FOUND when it is not the caller's.
    `host`: a host certificate (it has no critical options or extensions), else a user one."""
    from tunnelgw.crypto import ssh

    ca = await crud.get_reference(
        unit,
        SshCertificateAuthority,
        caller,
        cert.ssh_certificate_authority_id,
        "ssh_certificate_authority_id",
        lock="share",
    )
    request = ssh.CertificateRequest(
        key_id=cert.id,
        serial=ssh.new_serial(),
        principals=cert.principals,
        critical_options=critical_options or {},
        extensions=extensions or {},
        valid_after=cert.valid_after,
        valid_until=cert.valid_until,
    )
    cert.certificate = await asyncio.to_thread(
        ssh.sign_certificate, _private_key(ca), key, request, ssh.HOST if host else ssh.USER
    )


async def unexpired(unit: Unit, ca: SshCertificateAuthority) -> list[str]:
    """The id of a user and of a host certificate the CA signed that are unexpired now (at
    most one of each; [] when none): the CA's delete guard."""
    now = timefmt.utcnow()
    return [
        *await ssh_user_certificate.unexpired(unit, ca.id, now),
        *await ssh_host_certificate.unexpired(unit, ca.id, now),
    ]
