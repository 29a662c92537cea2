"""Event subscriptions (`esb_`): the parents of event sources; created by fixtures."""

from __future__ import annotations

from typing import Any, ClassVar

from sqlalchemy import Index

from models.base import DescribedResource


class EventSubscription(DescribedResource, table=True):
    __tablename__ = "event_subscription"
    __table_args__ = (Index("ix_event_subscription_account_id_id", "account_id", "id"),)
    PREFIX: ClassVar[str] = "esb"
    PATH: ClassVar[str] = "/event_subscriptions"

    def to_api(self) -> dict[str, Any]:
        return self.common_api()
