"""An event's deliveries as `event_record` stores them and the admin API reads them: apart
from the table's module, for what writes and reads them without the table (an account's event
routes, tunnelgw.services.event_routes, parsed before any event is recorded), and a route's
digest and how long a retired route is kept (tunnelgw.models.event_route)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from datetime import timedelta
from typing import Any

DELIVERED, FAILED = "delivered", "failed"


# A delivery as the admin API's reads see it: the values of these fields in a list (the keys of
# ten destinations' deliveries would be a third of the row; rows are written per change,
# bench/README.md).
DELIVERY_FIELDS = ("id", "subscription_id", "destination_id", "outcome", "error")
# - id: evd_, ids sort in the order the deliveries were made;
# - error: a failed delivery's injected status, error code and fault rule (None: delivered).
SUBSCRIPTION, DESTINATION = 1, 2  # the positions the admin API's filters read
Delivery = list[Any]
# As stored: the same without the id, which is implied. The event's id was made reserving
# one value per delivery (`ids.new_id(..., reserve=)`), and the n-th delivery's id has the
# n-th of them (`ids.following`). Rows written before revision 0023 hold the ids themselves
# (items of DELIVERY_FIELDS).
STORED_FIELDS = DELIVERY_FIELDS[1:]


# How long a retired route is kept at least, past any request that could still fire by it.
RETIRED_FOR = timedelta(hours=1)


def digest_of(pairs: Iterable[tuple[str, str]]) -> str:
    """A route's digest: of its (subscription, destination) pairs, in their order (revision
    0024 computes it the same way)."""
    text = "\n".join(f"{subscription} {destination}" for subscription, destination in pairs)
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()
