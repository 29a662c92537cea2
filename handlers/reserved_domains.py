"""Reserved domains (`/reserved_domains`): spec section 4.3.

Naming rules are in tunnelgw.rules.reserved_names, the certificate management lifecycle in
tunnelgw.rules.certmanagement (pure) and tunnelgw.services.certstore (settling stored rows on
each access).
"""

from __future__ import annotations

from typing import Any

from tunnelgw.core import ids, timefmt
from tunnelgw.core import settings as tunnelgw_settings
from tunnelgw.core.errors import ApiError, Code
from tunnelgw.models import EndpointConfiguration, ReservedDomain, TlsCertificate
from tunnelgw.models.endpoint import cloud_endpoints_on
from tunnelgw.rules import certmanagement, reserved_names
from tunnelgw.services import auth, certstore, crud, paging, quotas
from tunnelgw.services.auth import Caller
from tunnelgw.services.crud import Body
from tunnelgw.storage import db
from tunnelgw.storage.unit import Unit

ENDPOINT_CONFIGURATION_FIELDS = (
    "http_endpoint_configuration_id",
    "https_endpoint_configuration_id",
)


def _new_row(body: dict[str, Any], caller: Caller) -> ReservedDomain:
    """The row a create body asks for (references not yet checked); ApiError(400)."""
    config = tunnelgw_settings.current()
    domain = reserved_names.requested(body.get("name"), body.get("domain"), config)
    certmanagement.check_exclusive(body)
    cname_target, acme_target = reserved_names.targets(domain, config)
    row = ReservedDomain.new(
        id=ids.new_id(ReservedDomain.PREFIX),
        account_id=caller.account_id,
        domain=domain,
        region=body.get("region") or "us",
        cname_target=cname_target,
        acme_challenge_cname_target=acme_target,
    )
    crud.apply_patch(row, body, crud.DESCRIBED_FIELDS)
    row.resolves_to = _resolves_to(body.get("resolves_to"))
    policy = certmanagement.policy(body.get("certificate_management_policy"), config)
    if policy is not None:
        certstore.attach_policy(row, policy, timefmt.utcnow())
    return row


def _resolves_to(value: Any) -> Any:
    """The stored values of a `resolves_to` list: absent, null and [] are global resolution
    ([]); the schema has refused unknown values and duplicates (`uniqueItems`)."""
    return [entry["value"] for entry in value or ()]


async def _certificate(unit: Unit, caller: Caller, cert_id: str) -> TlsCertificate:
    """The caller's TLS certificate `cert_id` (404 ERR_REFERENCE_NOT_FOUND otherwise),
    share-locked: a concurrent delete of it waits for this unit, then finds it in use."""
    return await crud.get_reference(
        unit, TlsCertificate, caller, cert_id, "certificate_id", lock="share"
    )


async def create(body: Body = None) -> tuple[dict[str, Any], int]:
    body = body or {}
    caller = auth.caller()
    row = _new_row(body, caller)
    async with db.write() as unit:
        # Checked first for a clear error; the unique index decides under races (409).
        held_by = await crud.holder(unit, ReservedDomain.domain, row.domain)
        if held_by is not None:
            whose = "this account" if held_by == caller.account_id else "another account"
            raise ApiError(
                Code.DOMAIN_IN_USE,
                f"{row.domain!r} is already reserved.",
                context={"domain": row.domain, "reserved_by": whose},
                field="domain",
            )
        cert_id = body.get("certificate_id")
        if cert_id:  # "" is unset, as null is
            await _certificate(unit, caller, cert_id)
            row.certificate_id = cert_id
        await quotas.add(unit, row)
    return row.to_api(), 201


async def get(id: str) -> dict[str, Any]:  # noqa: A002 - the spec's parameter name
    return await certstore.read_settled(ReservedDomain, id)


async def list(
    limit: int = paging.MAX_LIMIT,
    before_id: str | None = None,
    filter: str | None = None,  # noqa: A002 - the spec's parameter name
) -> dict[str, Any]:
    return await certstore.list_settled(
        ReservedDomain, "reserved_domains", limit, before_id, filter
    )


async def _locked(unit: Unit, caller: Caller, id_: str) -> ReservedDomain:
    """The caller's row `id_`, locked for this write unit and settled to now; 404 else."""
    row = await crud.get_managed(unit, ReservedDomain, caller, id_, lock=True)
    await certstore.settle_row(unit, row, timefmt.utcnow())
    return row


async def _set_references(
    unit: Unit, caller: Caller, row: ReservedDomain, body: dict[str, Any]
) -> None:
    """The endpoint configurations and the uploaded certificate of a PATCH body."""
    for field in ENDPOINT_CONFIGURATION_FIELDS:
        value = body.get(field)
        if value:
            await crud.get_reference(unit, EndpointConfiguration, caller, value, field)
        if value is not None:
            setattr(row, field, value or None)  # "" clears
    cert_id = body.get("certificate_id")
    if cert_id:  # "" changes nothing, as null does
        await _certificate(unit, caller, cert_id)
        certstore.detach_policy(row)
        row.certificate_id = cert_id


async def update(id: str, body: Body = None) -> dict[str, Any]:  # noqa: A002
    body = body or {}
    certmanagement.check_exclusive(body)
    resolves_to = _resolves_to(body["resolves_to"]) if "resolves_to" in body else None
    caller = auth.caller()
    async with db.write() as unit:
        row = await _locked(unit, caller, id)
        crud.apply_patch(row, body, crud.DESCRIBED_FIELDS)
        if resolves_to is not None:  # present: replaces the list (null and [] are global)
            row.resolves_to = resolves_to
        await _set_references(unit, caller, row, body)
        certstore.apply_policy_change(row, body, timefmt.utcnow(), null_detaches=False)
    return row.to_api()


async def detach_certificate_management_policy(id: str) -> tuple[None, int]:  # noqa: A002
    async with db.write() as unit:
        certstore.detach_policy(await _locked(unit, auth.caller(), id))
    return None, 204


async def detach_certificate(id: str) -> tuple[None, int]:  # noqa: A002
    """204 as the API document says, also under a policy: then management stays on and a
    new provisioning job starts (`certificate` is null until it issues one)."""
    async with db.write() as unit:
        row = await _locked(unit, auth.caller(), id)
        if row.certificate_id is not None:
            certstore.detach_certificate(row, timefmt.utcnow())
    return None, 204


# The operations that are the shared CRUD ones (tunnelgw.services.crud.Resource). A
# reserved domain a cloud endpoint is on is not deleted (the platform refuses that too: its
# endpoints would be left without their domain).
resource = crud.Resource(
    ReservedDomain,
    "reserved_domains",
    in_use=crud.InUse(
        users=lambda unit, row: cloud_endpoints_on(unit, row.id),
        code=Code.DOMAIN_REFERENCED,
        message="The reserved domain {row.domain!r} is the domain of the cloud endpoint(s) "
        "{users}; delete them or change their URLs first.",
        details={"id": "{row.id}", "endpoints": "{listed}"},
        context={"domain": "{row.domain}"},
    ),
)
delete = resource.delete
