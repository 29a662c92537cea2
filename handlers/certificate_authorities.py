"""Certificate authorities (`/certificate_authorities`): spec section 4.4."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from models import CertificateAuthority
from tunnelgw.core import ids, lazy
from tunnelgw.core.errors import ApiError, Code
from tunnelgw.crypto import CryptoError
from tunnelgw.services import auth, crud, paging
from tunnelgw.services.crud import Body
from tunnelgw.storage import db

if TYPE_CHECKING:
    from tunnelgw.crypto import x509
else:  # cryptography loads at the first request that needs it (tunnelgw.core.lazy)
    x509 = lazy.module("tunnelgw.crypto.x509")


async def create(body: Body = None) -> tuple[dict[str, Any], int]:
    body = body or {}
    try:
        cert = x509.parse_ca(body["ca_pem"])
    except CryptoError as exc:
        # Rule names are catalog code names (tests/unit/test_crypto_x509.py keeps them so).
        raise ApiError(Code[exc.rule.name], exc.msg, field="ca_pem") from None
    ca = CertificateAuthority.new(
        id=ids.new_id(CertificateAuthority.PREFIX),
        account_id=auth.caller().account_id,
        ca_pem=cert.pem,
        subject_common_name=cert.subject_common_name,
        not_before=cert.not_before,
        not_after=cert.not_after,
        key_usages=[*cert.key_usages],
        extended_key_usages=[*cert.extended_key_usages],
    )
    crud.apply_patch(ca, body, crud.DESCRIBED_FIELDS)
    async with db.write() as unit:
        unit.add(ca)
    return ca.to_api(), 201


async def get(id: str) -> dict[str, Any]:  # noqa: A002 - the spec's parameter name
    return await crud.read_one(CertificateAuthority, id)


async def list(
    limit: int = paging.MAX_LIMIT,
    before_id: str | None = None,
    filter: str | None = None,  # noqa: A002 - the spec's parameter name
) -> crud.Listed:
    return await crud.read_page(
        CertificateAuthority, "certificate_authorities", limit, before_id, filter
    )


async def update(id: str, body: Body = None) -> dict[str, Any]:  # noqa: A002
    return await crud.update_described(CertificateAuthority, id, body)


async def delete(id: str) -> tuple[None, int]:  # noqa: A002
    return await crud.delete_one(CertificateAuthority, id)
