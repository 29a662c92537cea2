"""IP restrictions (`ipr_`): IP policies applied to one kind of traffic (`api`, `dashboard`,
`agent`, `endpoints`); the policies are rows of `ip_restriction_policy`, in the order given.
An account row carries a summary of its `api` restrictions (`Account.api_restriction`), so a
request of an account without any costs no extra statement."""

from __future__ import annotations

from typing import Any, ClassVar

from sqlalchemy import Index, String, bindparam, select
from sqlmodel import Field

from tunnelgw.core import urls
from tunnelgw.models.base import DescribedResource, Row, id_field
from tunnelgw.storage.statements import Query
from tunnelgw.storage.unit import Unit

TYPES = ("dashboard", "api", "agent", "endpoints")


class IpRestriction(DescribedResource, table=True):
    __tablename__ = "ip_restriction"
    __table_args__ = (Index("ix_ip_restriction_account_id_id", "account_id", "id"),)
    PREFIX: ClassVar[str] = "ipr"
    EVENT_KIND: ClassVar[str | None] = "ip_restriction"
    PATH: ClassVar[str] = "/ip_restrictions"
    FIXTURE_SECTION: ClassVar[str | None] = "ip_restrictions"

    type: str = Field(sa_type=String(16))
    enforced: bool = False

    def to_api(self, policy_ids: list[str] | None = None) -> dict[str, Any]:
        """The API shape, with the restriction's policies (`policies_of`) in order."""
        return {
            **self.common_api(),
            "enforced": self.enforced,
            "type": self.type,
            "ip_policies": [urls.ref("/ip_policies", id_) for id_ in policy_ids or []],
        }


class IpRestrictionPolicy(Row, table=True):
    """One policy of a restriction, at `position` in its list. The policy cannot be deleted
    while it is here (the foreign key, and the check that names the restrictions first)."""

    __tablename__ = "ip_restriction_policy"
    restriction_id: str = id_field(
        primary_key=True, foreign_key="ip_restriction.id", ondelete="CASCADE"
    )
    position: int = Field(primary_key=True)
    ip_policy_id: str = id_field(foreign_key="ip_policy.id", ondelete="RESTRICT", index=True)
    account_id: str = id_field(foreign_key="account.id", ondelete="CASCADE")


async def policies_of(unit: Unit, restriction_ids: list[str]) -> dict[str, list[str]]:
    """The policy ids of each restriction, in order (one statement)."""
    rows = await unit.select_in(IpRestrictionPolicy, "restriction_id", restriction_ids)
    found: dict[str, list[str]] = {id_: [] for id_ in restriction_ids}
    for row in sorted(rows, key=lambda row: (row.restriction_id, row.position)):
        found[row.restriction_id].append(row.ip_policy_id)
    return found


_USERS = Query(
    select(IpRestrictionPolicy.restriction_id)  # type: ignore[call-overload]
    .where(IpRestrictionPolicy.ip_policy_id == bindparam("policy_id"))
    .order_by(IpRestrictionPolicy.restriction_id)
)


async def restrictions_using(unit: Unit, policy_id: str) -> list[str]:
    """The ids of the restrictions that use the policy `policy_id`."""
    return list((await unit.exec(_USERS, {"policy_id": policy_id})).all())
