"""IP restrictions (`/ip_restrictions`): IP policies applied to one kind of traffic. The
account's summary of its `api` restrictions (`Account.api_restriction`) is kept in the same
unit of work as every change, under the account's row lock, so the credential check of the
next request on any worker sees it (tunnelgw.services.restrictions applies them)."""

from __future__ import annotations

import builtins
from collections.abc import Callable, Sequence
from typing import Any

from sqlalchemy import bindparam, select
from sqlalchemy import delete as sql_delete
from sqlmodel import col

from tunnelgw.core import ids
from tunnelgw.models import Account, IpPolicy, IpRestriction, IpRestrictionPolicy
from tunnelgw.models.ip_restriction import API_ENFORCED, API_NONE, API_RECORDED, policies_of
from tunnelgw.services import auth, crud, quotas
from tunnelgw.services.auth import Caller
from tunnelgw.services.crud import Body
from tunnelgw.storage import db
from tunnelgw.storage.statements import Query
from tunnelgw.storage.unit import Unit


async def _link(
    unit: Unit, caller: Caller, restriction: IpRestriction, policy_ids: Sequence[str]
) -> None:
    """Make `policy_ids` the restriction's policies, in order; each must be the caller's
    (404 ERR_REFERENCE_NOT_FOUND), share-locked so it cannot be deleted meanwhile."""
    for policy_id in policy_ids:
        await crud.get_reference(unit, IpPolicy, caller, policy_id, "ip_policy_ids", lock="share")
    await unit.exec(
        sql_delete(IpRestrictionPolicy).where(
            col(IpRestrictionPolicy.restriction_id) == restriction.id
        )
    )
    unit.add_all(
        [
            IpRestrictionPolicy.new(
                restriction_id=restriction.id,
                position=position,
                ip_policy_id=policy_id,
                account_id=restriction.account_id,
            )
            for position, policy_id in enumerate(policy_ids)
        ]
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
    account = await unit.get(Account, caller.account_id, lock=True)
    assert account is not None  # the caller's key names it
    return account


async def create(body: Body = None) -> tuple[dict[str, Any], int]:
    body = body or {}
    caller = auth.caller()
    restriction = IpRestriction.new(
        id=ids.new_id(IpRestriction.PREFIX),
        account_id=caller.account_id,
        type=body["type"],
        enforced=bool(body.get("enforced")),
    )
    crud.apply_patch(restriction, body, crud.DESCRIBED_FIELDS)
    policy_ids = builtins.list(body["ip_policy_ids"])
    async with db.write() as unit:
        account = await _account(unit, caller)
        await quotas.add(unit, restriction)
        await unit.flush()  # before its policy rows, which name it
        await _link(unit, caller, restriction, policy_ids)
        await _summarize(unit, account, restriction)
    return restriction.to_api(policy_ids), 201


async def get(id: str) -> dict[str, Any]:  # noqa: A002 - the spec's parameter name
    async with db.read() as unit:
        restriction = await crud.get_owned(unit, IpRestriction, auth.caller(), id)
        return restriction.to_api((await policies_of(unit, [restriction.id]))[restriction.id])


async def update(id: str, body: Body = None) -> dict[str, Any]:  # noqa: A002
    body = body or {}
    caller = auth.caller()
    async with db.write() as unit:
        account = await _account(unit, caller)
        restriction = await crud.get_managed(unit, IpRestriction, caller, id, lock=True)
        crud.apply_patch(restriction, body, crud.DESCRIBED_FIELDS)
        if body.get("enforced") is not None:
            restriction.enforced = body["enforced"]
        if body.get("ip_policy_ids"):  # [] and null change nothing
            await _link(unit, caller, restriction, body["ip_policy_ids"])
        policy_ids = (await policies_of(unit, [restriction.id]))[restriction.id]
        await _summarize(unit, account, restriction)
    return restriction.to_api(policy_ids)


async def delete(id: str) -> tuple[None, int]:  # noqa: A002
    caller = auth.caller()
    async with db.write() as unit:
        account = await _account(unit, caller)
        await unit.delete(await crud.get_managed(unit, IpRestriction, caller, id))
        await _summarize(unit, account, None)
    return None, 204


async def _with_policies(
    unit: Unit, rows: builtins.list[IpRestriction]
) -> Callable[[IpRestriction], dict[str, Any]]:
    """Renders the page's restrictions with their policies (read for the page at once)."""
    policies = await policies_of(unit, [row.id for row in rows])
    return lambda restriction: restriction.to_api(policies[restriction.id])


# The operation that is the shared CRUD one (tunnelgw.services.crud.Resource).
list = crud.Resource(IpRestriction, "ip_restrictions", renderer=_with_policies).list
