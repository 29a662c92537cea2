"""Where an account's events of a type went while none failed, kept once per route: the
deliveries such an event makes (one per subscription and destination of its type, all
delivered), which the events recorded then name by digest (`EventRecord.route`) in place of
holding them. An event's row is written with the change that fired it; its deliveries were
half of it with ten destinations (bench/README.md, issue 31).

The account's event routes (`Account.event_routes`) are stored with a row here for each route
they give (tunnelgw.services.event_routes.store), so every route a request fires by has its
row. A route the account no longer gives is retired, not deleted: a request whose credential
check read the routes before they changed still fires by it. It is deleted at a later change
of the routes once no recorded event names it and it has been retired for `RETIRED_FOR`."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, String
from sqlmodel import Field

from tunnelgw.models.base import TIMESTAMP, Row, id_field
from tunnelgw.models.event_delivery import RETIRED_FOR as RETIRED_FOR
from tunnelgw.models.event_delivery import Delivery
from tunnelgw.models.event_delivery import digest_of as digest_of
from tunnelgw.storage.unit import Unit


class EventRoute(Row, table=True):
    __tablename__ = "event_route"

    account_id: str = id_field(primary_key=True, foreign_key="account.id", ondelete="CASCADE")
    digest: str = Field(primary_key=True, sa_type=String(32))
    # An event's deliveries along the route when none fails, as EventRecord stores them.
    deliveries: list[Delivery] = Field(sa_type=JSON)  # STORED_FIELDS
    # When the account's routes stopped giving it (the machine's clock, not an account's
    # simulated one); None: they give it.
    retired_at: datetime | None = Field(default=None, sa_type=TIMESTAMP, nullable=True)


async def of_account(unit: Unit, account_id: str) -> list[EventRoute]:
    """The account's route rows, retired ones included (a few: its routes, and those retired
    that an event names or that are not yet `RETIRED_FOR` old)."""
    return await unit.select(EventRoute, f'"account_id" = {unit.mark}', [account_id])
