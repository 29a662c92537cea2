"""IP restrictions applied: whether the account's `api` restrictions admit a request's
client address to this API (only accounts whose summary says they have some are checked:
`Caller.api_restriction`, read with the credential check), and whether its `agent`
restrictions admit a simulated agent's address (tunnelgw.services.agents)."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import bindparam, select
from sqlmodel import col

from tunnelgw import models
from tunnelgw.core.errors import ApiError, Code
from tunnelgw.models.account import API_NONE
from tunnelgw.rules import cidrs
from tunnelgw.services.auth import Caller
from tunnelgw.storage import db
from tunnelgw.storage.statements import Query
from tunnelgw.storage.unit import Unit

# Each restriction of the account and type with the rules of its policies (a restriction
# whose policies have no rule comes once, with no cidr: it admits no address). The tables are
# named when it first runs: every server imports this module, and one whose accounts have no
# restriction never imports them (tunnelgw.models).
_RULES = Query(
    lambda: (
        select(
            col(models.IpRestriction.id),
            col(models.IpRestriction.enforced),
            col(models.IpPolicyRule.cidr),
            col(models.IpPolicyRule.action),
        )
        .select_from(models.IpRestriction)
        .join(
            models.IpRestrictionPolicy,
            col(models.IpRestrictionPolicy.restriction_id) == col(models.IpRestriction.id),
        )
        .outerjoin(
            models.IpPolicyRule,
            col(models.IpPolicyRule.ip_policy_id) == col(models.IpRestrictionPolicy.ip_policy_id),
        )
        .where(col(models.IpRestriction.account_id) == bindparam("account_id"))
        .where(col(models.IpRestriction.type) == bindparam("type"))
    )
)


@dataclass(frozen=True)
class Verdict:
    """The unenforced restrictions that would have refused the address (recorded, not
    enforced: the request goes on)."""

    recorded: tuple[str, ...] = ()


async def check_api(caller: Caller, client: cidrs.Address | None) -> Verdict:
    """Raises ApiError(403 ERR_IP_RESTRICTED) when an enforced `api` restriction of the
    caller's account does not admit `client` (None: the address is unknown, which no rule
    admits); else the unenforced ones that would have refused it."""
    if caller.api_restriction == API_NONE:
        return Verdict()
    async with db.read() as unit:
        return await check(unit, caller.account_id, "api", client)


# What a refusal tells the client to do, per restriction type.
_REFUSED = {
    "api": "requests to this API",
    "agent": "agents to connect",
}
_REMEDY = {
    "api": "Send it from an address its IP policies allow, or change the restriction (the "
    "admin API still answers from any address).",
    "agent": "Connect the agent from an address its IP policies allow, or change the restriction.",
}


async def check(unit: Unit, account_id: str, type_: str, client: cidrs.Address | None) -> Verdict:
    """Raises ApiError(403 ERR_IP_RESTRICTED) when an enforced restriction of the account of
    type `type_` (`api` or `agent`) does not admit `client`; else the unenforced ones that
    would have refused it."""
    rows = (await unit.exec(_RULES, {"account_id": account_id, "type": type_})).all()
    rules: dict[str, list[tuple[str, str]]] = {}
    enforced: dict[str, bool] = {}
    for restriction_id, is_enforced, cidr, action in rows:
        enforced[restriction_id] = is_enforced
        found = rules.setdefault(restriction_id, [])
        if cidr is not None:
            found.append((cidr, action))
    refusing = sorted(id_ for id_, found in rules.items() if not cidrs.admits(found, client))
    shown = str(client) if client is not None else "unknown"
    for id_ in refusing:
        if enforced[id_]:
            raise ApiError(
                Code.IP_RESTRICTED,
                f"The IP restriction {id_!r} of this account does not allow {_REFUSED[type_]} "
                f"from {shown}. {_REMEDY[type_]}",
                address=shown,
                restriction=id_,
            )
    return Verdict(tuple(refusing))
