"""Event subscriptions (`esb_`): which event types (its event sources, tunnelgw.models.event_source)
are sent to which event destinations (rows of `event_subscription_destination`)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, ClassVar

from sqlalchemy import Index, bindparam, select

from tunnelgw.core import urls
from tunnelgw.models.base import DescribedResource, Row, id_field
from tunnelgw.storage.statements import Query
from tunnelgw.storage.unit import Unit


class EventSubscription(DescribedResource, table=True):
    __tablename__ = "event_subscription"
    __table_args__ = (Index("ix_event_subscription_account_id_id", "account_id", "id"),)
    PREFIX: ClassVar[str] = "esb"
    EVENT_KIND: ClassVar[str | None] = "event_subscription"
    PATH: ClassVar[str] = "/event_subscriptions"
    FIXTURE_SECTION: ClassVar[str | None] = "event_subscriptions"

    def to_api(
        self, sources: Iterable[Any] = (), destination_ids: Iterable[str] = ()
    ) -> dict[str, Any]:
        """The API shape; `sources` are its EventSource rows, ordered by type, and
        `destination_ids` its destinations (`destinations_of`)."""
        return {
            **self.common_api(),
            "sources": [source.to_api() for source in sources],
            "destinations": [urls.ref("/event_destinations", id_) for id_ in destination_ids],
        }


class EventSubscriptionDestination(Row, table=True):
    """One event destination of a subscription. The destination cannot be deleted while it
    is here (the foreign key, and the check that names the subscriptions first)."""

    __tablename__ = "event_subscription_destination"
    subscription_id: str = id_field(
        primary_key=True, foreign_key="event_subscription.id", ondelete="CASCADE"
    )
    destination_id: str = id_field(
        primary_key=True, foreign_key="event_destination.id", ondelete="RESTRICT", index=True
    )
    account_id: str = id_field(foreign_key="account.id", ondelete="CASCADE")


async def destinations_of(unit: Unit, subscription_ids: list[str]) -> dict[str, list[str]]:
    """The destination ids of each subscription, in id order (one statement)."""
    rows = await unit.select_in(EventSubscriptionDestination, "subscription_id", subscription_ids)
    found: dict[str, list[str]] = {id_: [] for id_ in subscription_ids}
    for row in sorted(rows, key=lambda row: (row.subscription_id, row.destination_id)):
        found[row.subscription_id].append(row.destination_id)
    return found


_USERS = Query(
    select(EventSubscriptionDestination.subscription_id)  # type: ignore[call-overload]
    .where(EventSubscriptionDestination.destination_id == bindparam("destination_id"))
    .order_by(EventSubscriptionDestination.subscription_id)
)


async def subscriptions_using(unit: Unit, destination_id: str) -> list[str]:
    """The ids of the subscriptions that send to the destination `destination_id`."""
    return list((await unit.exec(_USERS, {"destination_id": destination_id})).all())
