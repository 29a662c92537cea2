"""IP policies (`/ip_policies`): named groups of allow and deny rules. A policy an IP
restriction uses cannot be deleted (409, naming the restrictions); its rules go with it."""

from __future__ import annotations

from tunnelgw.core.errors import ApiError, Code
from tunnelgw.models import IpPolicy
from tunnelgw.models.ip_restriction import restrictions_using
from tunnelgw.services import auth, crud
from tunnelgw.storage import db


async def delete(id: str) -> tuple[None, int]:  # noqa: A002 - the spec's parameter name
    async with db.write() as unit:
        # Locked before the check; a restriction that takes the policy up share-locks it.
        policy = await crud.get_managed(unit, IpPolicy, auth.caller(), id, lock=True)
        users = await restrictions_using(unit, policy.id)
        if users:
            raise ApiError(
                Code.IP_POLICY_IN_USE,
                f"The IP policy {id!r} is used by the IP restriction(s) {', '.join(users)}; "
                "take it out of them (PATCH /ip_restrictions/{id}) or delete them first.",
                id=id,
                restrictions=",".join(users),
            )
        await unit.delete(policy)
    return None, 204


# The operations that are the shared CRUD ones (tunnelgw.services.crud.Resource).
resource = crud.Resource(IpPolicy, "ip_policies")
create, get, list, update = resource.create, resource.get, resource.list, resource.update
