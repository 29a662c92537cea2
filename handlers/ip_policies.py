"""IP policies (`/ip_policies`): named groups of allow and deny rules. A policy an IP
restriction uses cannot be deleted (409, naming the restrictions); its rules go with it."""

from __future__ import annotations

from collections.abc import Sequence

from tunnelgw.core.errors import ApiError, Code
from tunnelgw.models import IpPolicy
from tunnelgw.models.ip_restriction import restrictions_using
from tunnelgw.services import crud


async def delete(id: str) -> tuple[None, int]:  # noqa: A002 - the spec's parameter name
    # A restriction that takes the policy up share-locks it.
    return await crud.delete_unless_used(IpPolicy, id, restrictions_using, _in_use)


def _in_use(policy: IpPolicy, users: Sequence[str]) -> ApiError:
    return ApiError(
        Code.IP_POLICY_IN_USE,
        f"The IP policy {policy.id!r} is used by the IP restriction(s) {', '.join(users)}; "
        "take it out of them (PATCH /ip_restrictions/{id}) or delete them first.",
        id=policy.id,
        restrictions=",".join(users),
    )


# The operations that are the shared CRUD ones (tunnelgw.services.crud.Resource).
resource = crud.Resource(IpPolicy, "ip_policies")
create, get, list, update = resource.create, resource.get, resource.list, resource.update
