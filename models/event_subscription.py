"""Event subscriptions (`esb_`): which event types (its event sources, models.event_source)
are sent to which event destinations. This server has no event destinations, so
`destinations` is always empty."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, ClassVar

from sqlalchemy import Index

from models.base import DescribedResource


class EventSubscription(DescribedResource, table=True):
    __tablename__ = "event_subscription"
    __table_args__ = (Index("ix_event_subscription_account_id_id", "account_id", "id"),)
    PREFIX: ClassVar[str] = "esb"
    PATH: ClassVar[str] = "/event_subscriptions"

    def to_api(self, sources: Iterable[Any] = ()) -> dict[str, Any]:
        """The API shape; `sources` are its EventSource rows, ordered by type."""
        return {
            **self.common_api(),
            "sources": [source.to_api() for source in sources],
            "destinations": [],
        }
