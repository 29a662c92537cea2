"""Event subscriptions and their sources stored: a subscription's sources (one per event
type) and its links to event destinations of the account (share-locked while linked, so a
destination's delete guard sees them), written in the unit that writes the subscription."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tunnelgw.core.errors import ApiError, Code
from tunnelgw.models import (
    EventDestination,
    EventSource,
    EventSubscription,
    EventSubscriptionDestination,
)
from tunnelgw.models.event_source import check_fields, of_subscription
from tunnelgw.models.event_subscription import destinations_of
from tunnelgw.services import crud, quotas
from tunnelgw.services.auth import Caller
from tunnelgw.storage import db
from tunnelgw.storage.unit import Unit

# The event types of a body's `sources`, each with the fields it captures.
Types = dict[str, list[str]]
# A subscription with its sources and the ids of its destinations.
Subscribed = tuple[EventSubscription, list[EventSource], list[str]]


async def _link(
    unit: Unit, caller: Caller, subscription: EventSubscription, destination_ids: list[str]
) -> None:
    """Make `destination_ids` the subscription's destinations (`crud.relink`)."""
    links = [
        EventSubscriptionDestination.new(
            subscription_id=subscription.id,
            destination_id=destination_id,
            account_id=subscription.account_id,
        )
        for destination_id in destination_ids
    ]
    subscribed = EventSubscriptionDestination.subscription_id
    await crud.relink(
        unit,
        caller,
        EventDestination,
        destination_ids,
        "destination_ids",
        subscribed,
        subscription.id,
        links,
    )


def types_of(body: dict[str, Any]) -> Types:
    """The event types of the body's `sources` (the schema makes them unique), each with
    the fields it captures (400 ERR_INVALID_FIELD for fields on a type that has none)."""
    found: Types = {}
    for index, source in enumerate(body.get("sources") or []):
        found[source["type"]] = check_fields(source, f"sources.{index}.fields")
    return dict(sorted(found.items()))


def _new_sources(subscription: EventSubscription, types: Types) -> list[EventSource]:
    return [
        EventSource.new(
            subscription_id=subscription.id,
            type=type_,
            account_id=subscription.account_id,
            fields=fields,
        )
        for type_, fields in types.items()
    ]


async def create(
    caller: Caller, subscription: EventSubscription, types: Types, destination_ids: list[str]
) -> list[EventSource]:
    """CREATE /event_subscriptions: `subscription` admitted by its quota and inserted with
    the sources `types` and the destinations `destination_ids`; its sources."""
    sources = _new_sources(subscription, types)
    async with db.write() as unit:
        await quotas.add(unit, subscription)  # inserted before its sources and destinations
        unit.add_all(sources)
        if destination_ids:
            await unit.flush()
            await _link(unit, caller, subscription, destination_ids)
    return sources


async def read(caller: Caller, id_: str) -> Subscribed:
    """GET /event_subscriptions/{id}: the caller's subscription, its sources, destinations."""
    async with db.read() as unit:
        subscription = await crud.get_owned(unit, EventSubscription, caller, id_)
        sources = await of_subscription(unit, subscription.id)
        destinations = (await destinations_of(unit, [subscription.id]))[subscription.id]
    return subscription, sources, destinations


async def with_sources(
    unit: Unit, rows: list[EventSubscription]
) -> Callable[[EventSubscription], dict[str, Any]]:
    """Renders a page's subscriptions with their sources and destinations (each read for
    the page at once)."""
    ids_ = [row.id for row in rows]
    found = await unit.select_in(EventSource, "subscription_id", ids_)
    sources: dict[str, list[EventSource]] = {row.id: [] for row in rows}
    for source in sorted(found, key=lambda s: s.type):
        sources[source.subscription_id].append(source)
    destinations = await destinations_of(unit, ids_)
    return lambda row: row.to_api(sources[row.id], destinations[row.id])


async def _replace_sources(
    unit: Unit, subscription: EventSubscription, types: Types
) -> list[EventSource]:
    """Make `types` the subscription's sources (removing the others, each kept one with the
    fields the body gives it); the sources by type."""
    kept: list[EventSource] = []
    for source in await of_subscription(unit, subscription.id):
        if source.type in types:
            if source.fields != types[source.type]:
                source.fields = types[source.type]  # the unit writes the change at commit
            kept.append(source)
        else:
            await unit.delete(source)
    have = {source.type for source in kept}
    added = _new_sources(
        subscription, {type_: fields for type_, fields in types.items() if type_ not in have}
    )
    unit.add_all(added)
    return sorted([*kept, *added], key=lambda source: source.type)


async def update(
    caller: Caller, id_: str, body: dict[str, Any], destination_ids: list[str]
) -> Subscribed:
    """PATCH /event_subscriptions/{id}: description and metadata, and the body's sources
    and the destinations `destination_ids` when not empty (empty changes nothing)."""
    async with db.write() as unit:
        subscription = await crud.get_managed(unit, EventSubscription, caller, id_, lock=True)
        crud.apply_patch(subscription, body, crud.DESCRIBED_FIELDS)
        types = types_of(body)
        if types:
            sources = await _replace_sources(unit, subscription, types)
        else:
            sources = await of_subscription(unit, subscription.id)
        if destination_ids:
            await _link(unit, caller, subscription, destination_ids)
        else:
            destination_ids = (await destinations_of(unit, [subscription.id]))[subscription.id]
    return subscription, sources, destination_ids


# --- sources (`/event_subscriptions/{subscription_id}/sources`) ---------------------------


async def _source(unit: Unit, caller: Caller, subscription_id: str, type_: str) -> EventSource:
    """The source `type_` of the caller's subscription; ApiError(404) if there is none."""
    subscription = await crud.get_owned(unit, EventSubscription, caller, subscription_id)
    source = await unit.get(EventSource, (subscription.id, type_))
    if source is None:
        raise ApiError(
            Code.NOT_FOUND,
            f"The event subscription {subscription_id!r} has no source of type {type_!r}.",
            id=subscription_id,
            type=type_,
        )
    return source


async def add_source(
    caller: Caller, subscription_id: str, type_: str, fields: list[str]
) -> EventSource:
    """CREATE: the source `type_` of the caller's subscription (409 ERR_EVENT_SOURCE_EXISTS
    when it has one)."""
    async with db.write() as unit:
        subscription = await crud.get_owned(unit, EventSubscription, caller, subscription_id)
        if await unit.get(EventSource, (subscription.id, type_)) is not None:
            raise ApiError(
                Code.EVENT_SOURCE_EXISTS,
                f"The event subscription {subscription_id!r} already has a source of type "
                f"{type_!r}.",
                id=subscription_id,
                field="type",
            )
        # Under a race the primary key (subscription_id, type) rejects the second insert.
        source = EventSource.new(
            subscription_id=subscription.id,
            type=type_,
            account_id=subscription.account_id,
            fields=fields,
        )
        unit.add(source)
    return source


async def source(caller: Caller, subscription_id: str, type_: str) -> EventSource:
    """GET: the source `type_` of the caller's subscription (404 without one)."""
    async with db.read() as unit:
        return await _source(unit, caller, subscription_id, type_)


async def sources(caller: Caller, subscription_id: str) -> list[EventSource]:
    """LIST: the sources of the caller's subscription, by type."""
    async with db.read() as unit:
        subscription = await crud.get_owned(unit, EventSubscription, caller, subscription_id)
        return await of_subscription(unit, subscription.id)


async def remove_source(caller: Caller, subscription_id: str, type_: str) -> None:
    """DELETE: the source `type_` of the caller's subscription removed."""
    async with db.write() as unit:
        await unit.delete(await _source(unit, caller, subscription_id, type_))
