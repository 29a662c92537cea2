"""Certificate authorities (`/certificate_authorities`): spec section 4.4."""

from __future__ import annotations

from typing import Any

from tunnelgw.core import ids
from tunnelgw.core.errors import ApiError, Code
from tunnelgw.crypto import CryptoError
from tunnelgw.models import CertificateAuthority
from tunnelgw.services import crud
from tunnelgw.services.auth import Caller
from tunnelgw.services.crud import Body

# tunnelgw.crypto.x509 (and cryptography, ~8 MiB) is imported by the operation that parses:
# a server that never gets a CA certificate does not load it.


async def create(caller: Caller, body: Body = None) -> tuple[dict[str, Any], int]:
    from tunnelgw.crypto import x509

    body = body or {}
    try:
        cert = x509.parse_ca(body["ca_pem"])
    except CryptoError as exc:
        # Rule names are catalog code names (tests/unit/test_crypto_x509.py keeps them so).
        raise ApiError(Code[exc.rule.name], exc.msg, field="ca_pem") from None
    ca = CertificateAuthority.new(
        id=ids.new_id(CertificateAuthority.PREFIX),
        account_id=caller.account_id,
        ca_pem=cert.pem,
        subject_common_name=cert.subject_common_name,
        not_before=cert.not_before,
        not_after=cert.not_after,
        key_usages=[*cert.key_usages],
        extended_key_usages=[*cert.extended_key_usages],
    )
    crud.apply_patch(ca, body, crud.DESCRIBED_FIELDS)
    return (await crud.add(ca)).to_api(), 201


# The operations that are the shared CRUD ones (tunnelgw.services.crud.Resource).
resource = crud.Resource(CertificateAuthority, "certificate_authorities")
get, list, update, delete = (
    resource.get,
    resource.list,
    resource.update,
    resource.delete,
)
