"""The admin API's event calls of `TunnelgwServer`: the events the account's event
subscriptions sent to its destinations (`GET /_admin/events`), and fault rules that fail
deliveries. Only the standard library is imported here at import time."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from urllib.parse import urlencode

from tunnelgw.testing import inputs

DELIVER = "event_destinations.deliver"


class EventCalls:
    """A mixin of `AdminCalls`: the server class provides `_object` (one request answered
    with a JSON object)."""

    def _object(
        self, method: str, path: str, body: Any = None
    ) -> dict[str, Any]:  # pragma: no cover
        raise NotImplementedError

    def events(
        self,
        type: str | None = None,  # noqa: A002 - the admin API's filter name
        destination_id: str | None = None,
        subscription_id: str | None = None,
        since: datetime | str | None = None,
        limit: int | None = None,
    ) -> list[dict[str, Any]]:
        """The events sent to the account's event destinations, oldest first: one item per
        event and destination, `{"id", "created_at", "subscription_id", "destination_id",
        "outcome", "error", "event"}`, where `event` is what the destination received
        (`event_id`, `event_type`, `event_timestamp`, `object`). Filters combine; `since` (a
        naive datetime is UTC) keeps those sent at or after it."""
        query = _query(type, destination_id, subscription_id, since, limit)
        items: list[dict[str, Any]] = self._object("GET", f"/_admin/events{query}")["events"]
        return items

    def count_events(
        self,
        type: str | None = None,  # noqa: A002 - the admin API's filter name
        destination_id: str | None = None,
        subscription_id: str | None = None,
        since: datetime | str | None = None,
    ) -> int:
        """How many of `events(...)` match the same filters."""
        query = _query(type, destination_id, subscription_id, since, None)
        found: int = self._object("GET", f"/_admin/events/count{query}")["count"]
        return found

    def fail_deliveries(
        self,
        status: int = 503,
        destination_id: str | None = None,
        count: int | None = None,
        probability: float | None = None,
    ) -> dict[str, Any]:
        """Make the deliveries to `destination_id` (None: every destination) fail with
        `status`, for the next `count` of them or with a `probability` (a fault rule on
        `event_destinations.deliver`; `clear_faults()` removes it). Returns the rule."""
        rule: dict[str, Any] = {"operation": DELIVER, "status": status}
        for name, value in (
            ("destination_id", destination_id),
            ("count", count),
            ("probability", probability),
        ):
            if value is not None:
                rule[name] = value
        return self._object("POST", "/_admin/faults", rule)


def _query(
    type_: str | None,
    destination_id: str | None,
    subscription_id: str | None,
    since: datetime | str | None,
    limit: int | None,
) -> str:
    params = {
        "type": type_,
        "destination_id": destination_id,
        "subscription_id": subscription_id,
        "since": None if since is None else inputs.as_rfc3339(since),
        "limit": limit,
    }
    given = {name: value for name, value in params.items() if value is not None}
    return f"?{urlencode(given)}" if given else ""
