"""Event subscriptions (`/event_subscriptions`): `sources` are the subscription's event
source rows, the ones the event source operations serve; `destination_ids` name event
destinations of the account (404 otherwise), linked in `event_subscription_destination`. On
update, `sources: []` and `destination_ids: []` change nothing (the Python client sends both
every time)."""

from __future__ import annotations

import builtins
from collections.abc import Callable
from typing import Any

from sqlalchemy import delete as sql_delete
from sqlmodel import col

from tunnelgw.core import ids
from tunnelgw.models import (
    EventDestination,
    EventSource,
    EventSubscription,
    EventSubscriptionDestination,
)
from tunnelgw.models.event_source import check_fields, of_subscription
from tunnelgw.models.event_subscription import destinations_of
from tunnelgw.services import auth, crud, paging, quotas
from tunnelgw.services.crud import Body
from tunnelgw.storage import db
from tunnelgw.storage.unit import Unit


def _destination_ids(body: dict[str, Any]) -> builtins.list[str]:
    """The body's destination ids, each once, in id order."""
    return sorted(set(body.get("destination_ids") or []))


async def _link(
    unit: Unit, subscription: EventSubscription, destination_ids: builtins.list[str]
) -> None:
    """Make `destination_ids` the subscription's destinations; each must be the caller's
    (404 ERR_REFERENCE_NOT_FOUND), share-locked so it cannot be deleted meanwhile."""
    caller = auth.caller()
    for destination_id in destination_ids:
        await crud.get_reference(
            unit, EventDestination, caller, destination_id, "destination_ids", lock="share"
        )
    await unit.exec(
        sql_delete(EventSubscriptionDestination).where(
            col(EventSubscriptionDestination.subscription_id) == subscription.id
        )
    )
    unit.add_all(
        [
            EventSubscriptionDestination.new(
                subscription_id=subscription.id,
                destination_id=destination_id,
                account_id=subscription.account_id,
            )
            for destination_id in destination_ids
        ]
    )


def _types(body: dict[str, Any]) -> dict[str, builtins.list[str]]:
    """The event types of the body's `sources` (the schema makes them unique), each with
    the fields it captures (400 ERR_INVALID_FIELD for fields on a type that has none)."""
    found: dict[str, builtins.list[str]] = {}
    for index, source in enumerate(body.get("sources") or []):
        found[source["type"]] = check_fields(source, f"sources.{index}.fields")
    return dict(sorted(found.items()))


def _new_sources(
    subscription: EventSubscription, types: dict[str, builtins.list[str]]
) -> builtins.list[EventSource]:
    return [
        EventSource.new(
            subscription_id=subscription.id,
            type=type_,
            account_id=subscription.account_id,
            fields=fields,
        )
        for type_, fields in types.items()
    ]


async def create(body: Body = None) -> tuple[dict[str, Any], int]:
    body = body or {}
    subscription = EventSubscription.new(
        id=ids.new_id(EventSubscription.PREFIX), account_id=auth.caller().account_id
    )
    crud.apply_patch(subscription, body, crud.DESCRIBED_FIELDS)
    sources = _new_sources(subscription, _types(body))
    destination_ids = _destination_ids(body)
    async with db.write() as unit:
        await quotas.add(unit, subscription)  # inserted before its sources and destinations
        unit.add_all(sources)
        if destination_ids:
            await unit.flush()
            await _link(unit, subscription, destination_ids)
    return subscription.to_api(sources, destination_ids), 201


async def get(id: str) -> dict[str, Any]:  # noqa: A002 - the spec's parameter name
    async with db.read() as unit:
        subscription = await crud.get_owned(unit, EventSubscription, auth.caller(), id)
        return subscription.to_api(
            await of_subscription(unit, subscription.id),
            (await destinations_of(unit, [subscription.id]))[subscription.id],
        )


async def list(
    limit: int = paging.MAX_LIMIT,
    before_id: str | None = None,
    filter: str | None = None,  # noqa: A002 - the spec's parameter name
) -> crud.Listed:
    return await crud.read_page(
        EventSubscription,
        "event_subscriptions",
        limit,
        before_id,
        filter,
        renderer=_with_sources,
    )


async def _with_sources(
    unit: Unit, rows: builtins.list[EventSubscription]
) -> Callable[[EventSubscription], dict[str, Any]]:
    """Renders the page's subscriptions with their sources and destinations (each read for
    the page at once)."""
    ids_ = [row.id for row in rows]
    found = await unit.select_in(EventSource, "subscription_id", ids_)
    sources: dict[str, builtins.list[EventSource]] = {row.id: [] for row in rows}
    for source in sorted(found, key=lambda s: s.type):
        sources[source.subscription_id].append(source)
    destinations = await destinations_of(unit, ids_)
    return lambda row: row.to_api(sources[row.id], destinations[row.id])


async def _replace_sources(
    unit: Unit, subscription: EventSubscription, types: dict[str, builtins.list[str]]
) -> builtins.list[EventSource]:
    """Make `types` the subscription's sources (removing the others, each kept one with the
    fields the body gives it); the sources by type."""
    kept: builtins.list[EventSource] = []
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


async def update(id: str, body: Body = None) -> dict[str, Any]:  # noqa: A002
    body = body or {}
    destination_ids = _destination_ids(body)
    async with db.write() as unit:
        subscription = await crud.get_managed(unit, EventSubscription, auth.caller(), id, lock=True)
        crud.apply_patch(subscription, body, crud.DESCRIBED_FIELDS)
        types = _types(body)
        if types:  # [] and null change nothing
            sources = await _replace_sources(unit, subscription, types)
        else:
            sources = await of_subscription(unit, subscription.id)
        if destination_ids:  # [] and null change nothing
            await _link(unit, subscription, destination_ids)
        else:
            destination_ids = (await destinations_of(unit, [subscription.id]))[subscription.id]
    return subscription.to_api(sources, destination_ids)


async def delete(id: str) -> tuple[None, int]:  # noqa: A002
    # The sources and destination links go with it (foreign keys ON DELETE CASCADE).
    return await crud.delete_one(EventSubscription, id)
