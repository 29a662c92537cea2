"""IP policies' rules and the IP restrictions that use the policies, stored: a rule's policy
and a restriction's policies share-locked while they are taken up (so a policy's delete guard
sees them), and the account's summary of its `api` restrictions (which the credential check
reads: tunnelgw.services.restrictions) kept in step in the unit that changes one."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from sqlalchemy import bindparam, select
from sqlmodel import col

from tunnelgw.models import Account, IpPolicy, IpPolicyRule, IpRestriction, IpRestrictionPolicy
from tunnelgw.models.account import API_ENFORCED, API_NONE, API_RECORDED
from tunnelgw.models.ip_restriction import policies_of
from tunnelgw.services import crud, quotas
from tunnelgw.services.auth import Caller
from tunnelgw.storage import db
from tunnelgw.storage.statements import Query
from tunnelgw.storage.unit import Unit


async def add_rule(caller: Caller, rule: IpPolicyRule) -> IpPolicyRule:
    """CREATE /ip_policy_rules: `rule` admitted by its quota and inserted; its policy must be
    the caller's (404 ERR_REFERENCE_NOT_FOUND)."""
    async with db.write() as unit:
        # Share-locked: the policy cannot be deleted between this check and the insert.
        await crud.get_reference(
            unit, IpPolicy, caller, rule.ip_policy_id, "ip_policy_id", lock="share"
        )
        await quotas.add(unit, rule)
    return rule


async def _link(
    unit: Unit, caller: Caller, restriction: IpRestriction, policy_ids: Sequence[str]
) -> None:
    """Make `policy_ids` the restriction's policies, in order (`crud.relink`)."""
    links = [
        IpRestrictionPolicy.new(
            restriction_id=restriction.id,
            position=position,
            ip_policy_id=policy_id,
            account_id=restriction.account_id,
        )
        for position, policy_id in enumerate(policy_ids)
    ]
    restricted = IpRestrictionPolicy.restriction_id
    await crud.relink(
        unit, caller, IpPolicy, policy_ids, "ip_policy_ids", restricted, restriction.id, links
    )
    await unit.flush()


async def _summarize(unit: Unit, account: Account, changed: IpRestriction | None) -> None:
    """Set the account's summary of its `api` restrictions, `changed` (a restriction created
    or updated in this unit, not yet written) counted as it is now."""
    stored = (await unit.exec(_API_RESTRICTIONS, {"account_id": account.id})).all()
    enforced = [flag for id_, flag in stored if changed is None or id_ != changed.id]
    if changed is not None and changed.type == "api":
        enforced.append(changed.enforced)
    if any(enforced):
        account.api_restriction = API_ENFORCED
    else:
        account.api_restriction = API_RECORDED if enforced else API_NONE


# (id, enforced) of the account's `api` restrictions, as stored (columns, not rows: a unit
# that changes one keeps its own record of it).
_API_RESTRICTIONS = Query(
    select(col(IpRestriction.id), col(IpRestriction.enforced))
    .where(col(IpRestriction.account_id) == bindparam("account_id"))
    .where(col(IpRestriction.type) == "api")
)


async def _account(unit: Unit, caller: Caller) -> Account:
    """The caller's account, locked: changes to its restrictions run one at a time."""
    account = await unit.get(Account, caller.account_id, lock="no key")
    assert account is not None  # the caller's key names it
    return account


async def create_restriction(
    caller: Caller, restriction: IpRestriction, policy_ids: list[str]
) -> IpRestriction:
    """CREATE /ip_restrictions: `restriction` with the policies `policy_ids`, in order."""
    async with db.write() as unit:
        account = await _account(unit, caller)
        await quotas.add(unit, restriction)
        await unit.flush()  # before its policy rows, which name it
        await _link(unit, caller, restriction, policy_ids)
        await _summarize(unit, account, restriction)
    return restriction


async def read_restriction(caller: Caller, id_: str) -> tuple[IpRestriction, list[str]]:
    """GET /ip_restrictions/{id}: the caller's restriction and its policy ids, in order."""
    async with db.read() as unit:
        restriction = await crud.get_owned(unit, IpRestriction, caller, id_)
        return restriction, (await policies_of(unit, [restriction.id]))[restriction.id]


async def update_restriction(
    caller: Caller, id_: str, body: dict[str, Any]
) -> tuple[IpRestriction, list[str]]:
    """PATCH /ip_restrictions/{id}: description, metadata, `enforced` and the policies
    (`[]` and null change nothing); the restriction and its policy ids."""
    async with db.write() as unit:
        account = await _account(unit, caller)
        restriction = await crud.get_managed(unit, IpRestriction, caller, id_, lock=True)
        crud.apply_patch(restriction, body, crud.DESCRIBED_FIELDS)
        if body.get("enforced") is not None:
            restriction.enforced = body["enforced"]
        if body.get("ip_policy_ids"):
            await _link(unit, caller, restriction, body["ip_policy_ids"])
        policy_ids = (await policies_of(unit, [restriction.id]))[restriction.id]
        await _summarize(unit, account, restriction)
    return restriction, policy_ids


async def delete_restriction(caller: Caller, id_: str) -> None:
    """DELETE /ip_restrictions/{id}: the restriction removed, the summary with it."""
    async with db.write() as unit:
        account = await _account(unit, caller)
        await unit.delete(await crud.get_managed(unit, IpRestriction, caller, id_))
        await _summarize(unit, account, None)


async def with_policies(
    unit: Unit, rows: list[IpRestriction]
) -> Callable[[IpRestriction], dict[str, Any]]:
    """Renders a page's restrictions with their policies (read for the page at once)."""
    policies = await policies_of(unit, [row.id for row in rows])
    return lambda restriction: restriction.to_api(policies[restriction.id])
