"""IP policy rules (`/ip_policy_rules`): one CIDR network of an IP policy, allowed or denied.
The network is stored in canonical form (tunnelgw.rules.cidrs); its policy and action are
fixed at creation."""

from __future__ import annotations

from typing import Any

from tunnelgw.core import ids
from tunnelgw.core.errors import ApiError, Code
from tunnelgw.models import IpPolicyRule
from tunnelgw.rules import cidrs
from tunnelgw.services import crud, ip_policies
from tunnelgw.services.auth import Caller
from tunnelgw.services.crud import Body


def _cidr(value: str) -> str:
    try:
        return cidrs.canonical(value)
    except cidrs.CidrError as exc:
        context = {"cidr": value[:64]}
        raise ApiError(Code.INVALID_CIDR, str(exc), context=context, field="cidr") from None


async def create(caller: Caller, body: Body = None) -> tuple[dict[str, Any], int]:
    body = body or {}
    caller = caller
    rule = IpPolicyRule.new(
        id=ids.new_id(IpPolicyRule.PREFIX),
        account_id=caller.account_id,
        ip_policy_id=body["ip_policy_id"],
        cidr=_cidr(body["cidr"]),
        action=body["action"],
    )
    crud.apply_patch(rule, body, crud.DESCRIBED_FIELDS)
    return (await ip_policies.add_rule(caller, rule)).to_api(), 201


async def update(caller: Caller, id: str, body: Body = None) -> dict[str, Any]:  # noqa: A002
    body = body or {}
    cidr = _cidr(body["cidr"]) if body.get("cidr") is not None else None

    def change(rule: IpPolicyRule) -> None:
        crud.apply_patch(rule, body, crud.DESCRIBED_FIELDS)
        if cidr is not None:
            rule.cidr = cidr

    return await crud.update_one(caller, IpPolicyRule, id, change)


# The operations that are the shared CRUD ones (tunnelgw.services.crud.Resource).
resource = crud.Resource(IpPolicyRule, "ip_policy_rules")
get, list, delete = resource.get, resource.list, resource.delete
