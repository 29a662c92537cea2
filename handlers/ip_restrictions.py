"""IP restrictions (`/ip_restrictions`): IP policies applied to one kind of traffic. The
account's summary of its `api` restrictions (`Account.api_restriction`) is kept in the same
unit of work as every change, under the account's row lock, so the credential check of the
next request on any worker sees it (tunnelgw.services.ip_policies stores them,
tunnelgw.services.restrictions applies them)."""

from __future__ import annotations

import builtins
from typing import Any

from tunnelgw.core import ids
from tunnelgw.models import IpRestriction
from tunnelgw.services import crud, ip_policies
from tunnelgw.services.auth import Caller
from tunnelgw.services.crud import Body


async def create(caller: Caller, body: Body = None) -> tuple[dict[str, Any], int]:
    body = body or {}
    caller = caller
    restriction = IpRestriction.new(
        id=ids.new_id(IpRestriction.PREFIX),
        account_id=caller.account_id,
        type=body["type"],
        enforced=bool(body.get("enforced")),
    )
    crud.apply_patch(restriction, body, crud.DESCRIBED_FIELDS)
    policy_ids = builtins.list(body["ip_policy_ids"])
    await ip_policies.create_restriction(caller, restriction, policy_ids)
    return restriction.to_api(policy_ids), 201


async def get(caller: Caller, id: str) -> dict[str, Any]:  # noqa: A002 - the spec's parameter name
    restriction, policy_ids = await ip_policies.read_restriction(caller, id)
    return restriction.to_api(policy_ids)


async def update(caller: Caller, id: str, body: Body = None) -> dict[str, Any]:  # noqa: A002
    restriction, policy_ids = await ip_policies.update_restriction(caller, id, body or {})
    return restriction.to_api(policy_ids)


async def delete(caller: Caller, id: str) -> tuple[None, int]:  # noqa: A002
    await ip_policies.delete_restriction(caller, id)
    return None, 204


# The operation that is the shared CRUD one (tunnelgw.services.crud.Resource).
list = crud.Resource(IpRestriction, "ip_restrictions", renderer=ip_policies.with_policies).list
