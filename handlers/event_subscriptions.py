"""Event subscriptions (`/event_subscriptions`): `sources` are the subscription's event
source rows, the ones the event source operations serve; `destination_ids` name event
destinations of the account (404 otherwise), linked in `event_subscription_destination`. On
update, `sources: []` and `destination_ids: []` change nothing (the Python client sends both
every time)."""

from __future__ import annotations

import builtins
from typing import Any

from tunnelgw.core import ids
from tunnelgw.models import EventSubscription
from tunnelgw.services import crud, event_subscriptions, paging
from tunnelgw.services.auth import Caller
from tunnelgw.services.crud import Body


def _destination_ids(body: dict[str, Any]) -> builtins.list[str]:
    """The body's destination ids, each once, in id order."""
    return sorted(set(body.get("destination_ids") or []))


async def create(caller: Caller, body: Body = None) -> tuple[dict[str, Any], int]:
    body = body or {}
    caller = caller
    subscription = EventSubscription.new(
        id=ids.new_id(EventSubscription.PREFIX), account_id=caller.account_id
    )
    crud.apply_patch(subscription, body, crud.DESCRIBED_FIELDS)
    types, destination_ids = event_subscriptions.types_of(body), _destination_ids(body)
    sources = await event_subscriptions.create(caller, subscription, types, destination_ids)
    return subscription.to_api(sources, destination_ids), 201


async def get(caller: Caller, id: str) -> dict[str, Any]:  # noqa: A002 - the spec's parameter name
    subscription, sources, destinations = await event_subscriptions.read(caller, id)
    return subscription.to_api(sources, destinations)


async def list(
    caller: Caller,
    limit: int = paging.MAX_LIMIT,
    before_id: str | None = None,
    filter: str | None = None,  # noqa: A002 - the spec's parameter name
) -> crud.Listed:
    return await crud.read_page(
        caller,
        EventSubscription,
        "event_subscriptions",
        limit,
        before_id,
        filter,
        renderer=event_subscriptions.with_sources,
    )


async def update(caller: Caller, id: str, body: Body = None) -> dict[str, Any]:  # noqa: A002
    body = body or {}
    # `sources: []` and `destination_ids: []` (and null) change nothing.
    subscription, sources, destinations = await event_subscriptions.update(
        caller, id, body, _destination_ids(body)
    )
    return subscription.to_api(sources, destinations)


async def delete(caller: Caller, id: str) -> tuple[None, int]:  # noqa: A002
    # The sources and destination links go with it (foreign keys ON DELETE CASCADE).
    return await crud.delete_one(caller, EventSubscription, id)
