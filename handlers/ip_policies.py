"""IP policies (`/ip_policies`): named groups of allow and deny rules. A policy an IP
restriction uses cannot be deleted (409, naming the restrictions); its rules go with it."""

from __future__ import annotations

from tunnelgw.core.errors import Code
from tunnelgw.models import IpPolicy
from tunnelgw.models.ip_restriction import restrictions_using
from tunnelgw.services import crud

# The operations that are the shared CRUD ones (tunnelgw.services.crud.Resource); a
# restriction that takes the policy up share-locks it.
resource = crud.Resource(
    IpPolicy,
    "ip_policies",
    in_use=crud.InUse(
        users=lambda unit, policy: restrictions_using(unit, policy.id),
        code=Code.IP_POLICY_IN_USE,
        message="The IP policy {row.id!r} is used by the IP restriction(s) {users}; take it "
        "out of them (PATCH /ip_restrictions/{{id}}) or delete them first.",
        details={"id": "{row.id}", "restrictions": "{listed}"},
    ),
)
create, get, list = resource.create, resource.get, resource.list
update, delete = resource.update, resource.delete
