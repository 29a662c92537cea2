"""Fired events (`ev_`): one row per event an account's event subscriptions sent, with its
deliveries, one per destination (`evd_`), and whether each arrived. Written in the transaction
of the change that fired the event (tunnelgw.services.events).

The event is stored once however many destinations it went to: a delivery is a small item of
`deliveries`, and the admin API's reads expand the row into one item per delivery. An event
whose deliveries were all made names its route instead (`route`, tunnelgw.models.event_route),
which holds them once for all the events of the route."""

from __future__ import annotations

from typing import Any, ClassVar

from sqlalchemy import JSON, Index, Integer, String
from sqlmodel import Field

from tunnelgw.core import ids
from tunnelgw.models.base import SEQ_TYPE, AccountScoped, id_field
from tunnelgw.models.event_delivery import DELIVERY_FIELDS, Delivery


class EventRecord(AccountScoped, table=True):
    __tablename__ = "event_record"
    # `delivery_count` in the index: the bound on deliveries (tunnelgw.services.bounds) sums it
    # from the index alone.
    __table_args__ = (Index("ix_event_record_account_id_id", "account_id", "id", "delivery_count"),)
    PREFIX: ClassVar[str] = "ev"
    DELIVERY_PREFIX: ClassVar[str] = "evd"
    PATH: ClassVar[str] = "/_admin/events"
    QUOTA: ClassVar[bool] = False

    # Keyed by a number the database gives (SQLite's rowid), not by the event's id: a text key
    # would be a third b-tree each event's row is written to, beside the table and the index
    # the reads and the bound use (bench/README.md, issue 31). Ids are unique as made
    # (tunnelgw.core.ids), and every read goes by the account and the id, through the index.
    seq: int | None = Field(default=None, primary_key=True, sa_type=SEQ_TYPE)
    id: str = id_field()
    event_type: str = Field(sa_type=String(128))
    # The event as sent: the envelope and the object (the destinations' format: JSON).
    event: dict[str, Any] = Field(default_factory=dict, sa_type=JSON)
    # No foreign keys in them: a delivery is the record of what was sent, kept when its
    # subscription or destination is deleted. None: those of `route`.
    deliveries: list[Delivery] | None = Field(default=None, sa_type=JSON, nullable=True)
    delivery_count: int = Field(sa_type=Integer)
    # The digest of the account's route (EventRoute) whose deliveries the event made, all
    # delivered; None: `deliveries` holds them.
    route: str | None = Field(default=None, sa_type=String(32), nullable=True)

    def with_ids(self, stored: list[Delivery]) -> list[Delivery]:
        """The event's deliveries, `stored` (its own, or its route's), each with its id first
        (items of DELIVERY_FIELDS)."""
        if not stored or len(stored[0]) == len(DELIVERY_FIELDS):  # written before 0023
            return stored
        delivery_ids = ids.following(self.id, self.DELIVERY_PREFIX, len(stored))
        return [[id_, *item] for id_, item in zip(delivery_ids, stored, strict=True)]

    def delivery_api(self, delivery: Delivery) -> dict[str, Any]:
        """One delivery of the event as the admin API shows it."""
        shown = dict(zip(DELIVERY_FIELDS, delivery, strict=True))
        return {**shown, "created_at": self.api_time("created_at"), "event": self.event}
