"""Event sources: the event types (`<name>.v0`) an event subscription triggers for."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Index, String, bindparam, select
from sqlmodel import Field

from tunnelgw.core import timefmt, urls
from tunnelgw.core.errors import ApiError, Code
from tunnelgw.models.base import TIMESTAMP, Row, id_field
from tunnelgw.storage.statements import Query
from tunnelgw.storage.unit import Unit

# The traffic event types: the only ones whose sources may choose `fields` to capture.
TRAFFIC_TYPES = frozenset({"http_request_complete.v0", "tcp_connection_closed.v0"})


def check_fields(source: dict[str, Any], where: str) -> list[str]:
    """The `fields` of a source in a request body ([] when absent or null); ApiError(400
    ERR_INVALID_FIELD) when a type other than a traffic type chooses any."""
    fields = list(source.get("fields") or ())
    if fields and source["type"] not in TRAFFIC_TYPES:
        raise ApiError(
            Code.INVALID_FIELD,
            f"Event sources of type {source['type']!r} may not choose fields; only "
            f"{', '.join(sorted(TRAFFIC_TYPES))} do.",
            field=where,
        )
    return fields


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
    # The fields a traffic event source captures, as sent ([]: none chosen). The platform's
    # API document does not describe them; its Terraform provider sends and reads them.
    fields: list[str] = Field(
        default_factory=list, sa_type=JSON, sa_column_kwargs={"server_default": "[]"}
    )

    def to_api(self) -> dict[str, Any]:
        path = f"{sources_path(self.subscription_id)}/{self.type}"
        return {"type": self.type, "fields": list(self.fields), "uri": urls.absolute(path)}


async def of_subscription(unit: Unit, subscription_id: str) -> list[EventSource]:
    """Every source of the subscription, ordered by type (code-point order on every engine;
    a subscription has at most one source per catalog type, so sorting here is cheap)."""
    found = await unit.exec(_OF_SUBSCRIPTION, {"subscription_id": subscription_id})
    return sorted(found.all(), key=lambda source: source.type)


_OF_SUBSCRIPTION = Query(
    select(EventSource).where(EventSource.subscription_id == bindparam("subscription_id"))  # type: ignore[arg-type]
)
