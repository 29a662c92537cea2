"""TLS certificates (`/tls_certificates`): an uploaded chain (leaf first) with the leaf's
private key, checked by tunnelgw.crypto.tls; certificate management's issued certificates are
rows of the same table (tunnelgw.services.certstore). The private key is stored wrapped under
the KEK and never returned; a certificate a reserved domain uses cannot be deleted (409)."""

from __future__ import annotations

import asyncio
from typing import Any

from tunnelgw.core import ids
from tunnelgw.core.errors import ApiError, Code
from tunnelgw.crypto import CryptoError, keys
from tunnelgw.models import TlsCertificate
from tunnelgw.models.reserved_domain import using_certificate
from tunnelgw.models.tls_certificate import certificate_columns
from tunnelgw.services import crud
from tunnelgw.services.auth import Caller
from tunnelgw.services.crud import Body

# tunnelgw.crypto.tls (and cryptography, ~8 MiB) is imported by the operation that parses:
# a server that never gets a certificate does not load it.


async def create(caller: Caller, body: Body = None) -> tuple[dict[str, Any], int]:
    from tunnelgw.crypto import tls

    body = body or {}
    try:
        # Checking a large RSA key takes a while: keep the event loop free meanwhile.
        parsed = await asyncio.to_thread(
            tls.parse_tls_certificate, body["certificate_pem"], body["private_key_pem"]
        )
    except CryptoError as exc:
        # Rule names are catalog code names (tests/unit/test_crypto_tls.py keeps them so).
        raise ApiError(Code[exc.rule.name], exc.msg, field=exc.field or "certificate_pem") from None
    cert_id = ids.new_id(TlsCertificate.PREFIX)
    cert = TlsCertificate.new(
        id=cert_id,
        account_id=caller.account_id,
        certificate_pem=parsed.certificate_pem,
        wrapped_private_key=keys.wrap(
            keys.current(), parsed.private_key_der, cert_id.encode("ascii")
        ),
        **certificate_columns(parsed.fields),
    )
    crud.apply_patch(cert, body, crud.DESCRIBED_FIELDS)
    return (await crud.add(cert)).to_api(), 201


# The operations that are the shared CRUD ones (tunnelgw.services.crud.Resource); attaching a
# certificate to a domain share-locks it.
resource = crud.Resource(
    TlsCertificate,
    "tls_certificates",
    in_use=crud.InUse(
        users=lambda unit, cert: using_certificate(unit, cert.id),
        code=Code.CERTIFICATE_IN_USE,
        message="The TLS certificate {row.id!r} is a reserved domain's certificate; attach "
        "another certificate to the domain or detach it (DELETE "
        "/reserved_domains/{{id}}/certificate) first.",
        details={"id": "{row.id}"},
    ),
)
get, list = resource.get, resource.list
update, delete = resource.update, resource.delete
