"""Agent ingresses (`/agent_ingresses`): spec section 4.7.

The domain is stored lower-case and is unique over all accounts; the server's own domains
are refused. `ns_targets` come from the settings, `region_domains` from hostnames.REGIONS.
Certificate management (a policy, and the simulated provisioning job's status) is the one
reserved domains have (tunnelgw.services.certstore); a PATCH with the policy null turns it off.
"""

from __future__ import annotations

from typing import Any

from tunnelgw.core import ids, settings, timefmt
from tunnelgw.core.errors import ApiError, Code
from tunnelgw.models import AgentIngress
from tunnelgw.rules import certmanagement, hostnames
from tunnelgw.services import certstore, crud, paging, reservations
from tunnelgw.services.auth import Caller
from tunnelgw.services.crud import Body


def _service_domains() -> tuple[str, ...]:
    """The server's own domains: no agent ingress may be one of them or under one."""
    current = settings.current()
    return (current.shared_domain, current.cname_suffix, current.acme_challenge_suffix)


def _checked_domain(domain: str) -> str:
    """`domain` lower-cased; ApiError(409 ERR_DOMAIN_IN_USE) if it is the service's.

    A well-formed name the service already holds is a conflict with existing state, like a
    name another account holds, not malformed input.
    """
    domain = domain.lower()
    for service in _service_domains():
        if hostnames.is_at_or_under(domain, service):
            raise ApiError(
                Code.DOMAIN_IN_USE,
                f"{domain!r} is the service's domain {service!r} or under it; an agent "
                "ingress needs a domain you own.",
                context={"domain": domain, "reason": "service"},
                field="domain",
            )
    return domain


async def create(caller: Caller, body: Body = None) -> tuple[dict[str, Any], int]:
    body = body or {}
    domain = _checked_domain(body["domain"])
    ingress = AgentIngress.new(
        id=ids.new_id(AgentIngress.PREFIX),
        account_id=caller.account_id,
        domain=domain,
        ns_targets=settings.current().ns_target_list(),
        region_domains=hostnames.region_domains(domain),
    )
    crud.apply_patch(ingress, body, crud.DESCRIBED_FIELDS)
    policy = certmanagement.policy(body.get("certificate_management_policy"), settings.current())
    if policy is not None:
        certstore.attach_policy(ingress, policy, timefmt.utcnow())
    await reservations.create_ingress(ingress)
    return ingress.to_api(), 201


async def get(caller: Caller, id: str) -> dict[str, Any]:  # noqa: A002 - the spec's parameter name
    return await certstore.read_settled(caller, AgentIngress, id)


async def list(
    caller: Caller,
    limit: int = paging.MAX_LIMIT,
    before_id: str | None = None,
    filter: str | None = None,  # noqa: A002 - the spec's parameter name
) -> dict[str, Any]:
    return await certstore.list_settled(caller, AgentIngress, "ingresses", limit, before_id, filter)


async def update(caller: Caller, id: str, body: Body = None) -> dict[str, Any]:  # noqa: A002
    body = body or {}
    row = await reservations.update_ingress(caller, id, body)
    return row.to_api()


# The operations that are the shared CRUD ones (tunnelgw.services.crud.Resource).
resource = crud.Resource(AgentIngress, "ingresses")
delete = resource.delete
