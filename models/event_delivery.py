"""Event deliveries (`evd_`): what the account's event subscriptions sent to each event
destination (one row per event and destination, in id order), and whether it arrived. Written
in the transaction of the change that fired the event (tunnelgw.services.events)."""

from __future__ import annotations

from typing import Any, ClassVar

from sqlalchemy import JSON, Index, String
from sqlmodel import Field

from tunnelgw.models.base import ID_TYPE, AccountScoped

DELIVERED, FAILED = "delivered", "failed"


class EventDelivery(AccountScoped, table=True):
    __tablename__ = "event_delivery"
    __table_args__ = (Index("ix_event_delivery_account_id_id", "account_id", "id"),)
    PREFIX: ClassVar[str] = "evd"
    PATH: ClassVar[str] = "/_admin/events"
    QUOTA: ClassVar[bool] = False

    event_id: str = Field(sa_type=ID_TYPE)
    event_type: str = Field(sa_type=String(128))
    # No foreign keys: a delivery is the record of what was sent, kept when its subscription
    # or destination is deleted.
    subscription_id: str = Field(sa_type=ID_TYPE)
    destination_id: str = Field(sa_type=ID_TYPE)
    # The event as sent: the envelope and the object (the destination's format: JSON).
    event: dict[str, Any] = Field(default_factory=dict, sa_type=JSON)
    outcome: str = Field(default=DELIVERED, sa_type=String(16))
    # A failed delivery's error: the injected status, error code and fault rule.
    error: dict[str, Any] | None = Field(default=None, sa_type=JSON)

    def to_api(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "created_at": self.api_time("created_at"),
            "subscription_id": self.subscription_id,
            "destination_id": self.destination_id,
            "outcome": self.outcome,
            "error": self.error,
            "event": self.event,
        }
