"""Reserved domains (`/reserved_domains`): spec section 4.3.

Naming rules are in tunnelgw.rules.reserved_names, the certificate management lifecycle in
tunnelgw.rules.certmanagement (pure) and tunnelgw.services.certstore (settling stored rows on
each access).
"""

from __future__ import annotations

from typing import Any

from tunnelgw.core import ids, timefmt
from tunnelgw.core import settings as tunnelgw_settings
from tunnelgw.core.errors import Code
from tunnelgw.models import ReservedDomain
from tunnelgw.models.endpoint import cloud_endpoints_on
from tunnelgw.rules import certmanagement, reserved_names
from tunnelgw.services import certstore, crud, paging, reservations
from tunnelgw.services.auth import Caller
from tunnelgw.services.crud import Body


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


async def create(caller: Caller, body: Body = None) -> tuple[dict[str, Any], int]:
    body = body or {}
    caller = caller
    row = _new_row(body, caller)
    await reservations.create_domain(caller, row, body.get("certificate_id"))
    return row.to_api(), 201


async def get(caller: Caller, id: str) -> dict[str, Any]:  # noqa: A002 - the spec's parameter name
    return await certstore.read_settled(caller, ReservedDomain, id)


async def list(
    caller: Caller,
    limit: int = paging.MAX_LIMIT,
    before_id: str | None = None,
    filter: str | None = None,  # noqa: A002 - the spec's parameter name
) -> dict[str, Any]:
    return await certstore.list_settled(
        caller, ReservedDomain, "reserved_domains", limit, before_id, filter
    )


async def update(caller: Caller, id: str, body: Body = None) -> dict[str, Any]:  # noqa: A002
    body = body or {}
    certmanagement.check_exclusive(body)
    resolves_to = _resolves_to(body["resolves_to"]) if "resolves_to" in body else None
    row = await reservations.update_domain(caller, id, body, resolves_to)
    return row.to_api()


async def detach_certificate_management_policy(caller: Caller, id: str) -> tuple[None, int]:  # noqa: A002
    await reservations.detach_policy(caller, id)
    return None, 204


async def detach_certificate(caller: Caller, id: str) -> tuple[None, int]:  # noqa: A002
    """204 as the API document says, also under a policy: then management stays on and a
    new provisioning job starts (`certificate` is null until it issues one)."""
    await reservations.detach_certificate(caller, id)
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
