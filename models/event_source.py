"""Event sources: the event types (`<name>.v0`) an event subscription triggers for."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Index, String, bindparam, select
from sqlmodel import Field

from models.base import TIMESTAMP, Row, id_field
from tunnelgw.core import timefmt, urls
from tunnelgw.storage.statements import Query
from tunnelgw.storage.unit import Unit


def sources_path(subscription_id: str) -> str:
    """The collection path of a subscription's sources."""
    return f"/event_subscriptions/{subscription_id}/sources"


class EventSource(Row, table=True):
    __tablename__ = "event_source"
    # The subscriptions of an account that a change's event type reaches (services.events).
    __table_args__ = (Index("ix_event_source_account_id_type", "account_id", "type"),)

    subscription_id: str = id_field(
        primary_key=True, foreign_key="event_subscription.id", ondelete="CASCADE"
    )
    type: str = Field(primary_key=True, sa_type=String(128))
    account_id: str = id_field(foreign_key="account.id", ondelete="CASCADE")
    created_at: datetime = Field(default_factory=timefmt.utcnow, sa_type=TIMESTAMP)

    def to_api(self) -> dict[str, Any]:
        path = f"{sources_path(self.subscription_id)}/{self.type}"
        return {"type": self.type, "uri": urls.absolute(path)}


async def of_subscription(unit: Unit, subscription_id: str) -> list[EventSource]:
    """Every source of the subscription, ordered by type (code-point order on every engine;
    a subscription has at most one source per catalog type, so sorting here is cheap)."""
    found = await unit.exec(_OF_SUBSCRIPTION, {"subscription_id": subscription_id})
    return sorted(found.all(), key=lambda source: source.type)


_OF_SUBSCRIPTION = Query(
    select(EventSource).where(EventSource.subscription_id == bindparam("subscription_id"))  # type: ignore[arg-type]
)
