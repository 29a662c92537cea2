"""Event sources: the event types (`<name>.v0`) an event subscription triggers for."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import String
from sqlmodel import Field, SQLModel

from models.base import TIMESTAMP, id_field
from tunnelgw import timefmt, urls


class EventSource(SQLModel, table=True):
    __tablename__ = "event_source"

    subscription_id: str = id_field(
        primary_key=True, foreign_key="event_subscription.id", ondelete="CASCADE"
    )
    type: str = Field(primary_key=True, sa_type=String(128))
    account_id: str = id_field(foreign_key="account.id", ondelete="CASCADE")
    created_at: datetime = Field(default_factory=timefmt.utcnow, sa_type=TIMESTAMP)

    def to_api(self) -> dict[str, Any]:
        path = f"/event_subscriptions/{self.subscription_id}/sources/{self.type}"
        return {"type": self.type, "uri": urls.absolute(path)}
