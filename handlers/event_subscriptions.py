"""Event subscriptions (`/event_subscriptions`): `sources` are the subscription's event
source rows, the ones the event source operations serve. This server has no event
destinations: a non-empty `destination_ids` is 404. On update, `sources: []` and
`destination_ids: []` change nothing (the Python client sends `sources: []` every time)."""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterable
from typing import Any

from models import EventSource, EventSubscription
from models.event_source import of_subscription
from tunnelgw.core import ids
from tunnelgw.core.errors import ApiError, Code
from tunnelgw.services import auth, crud, paging, quotas
from tunnelgw.services.crud import Body
from tunnelgw.storage import db
from tunnelgw.storage.unit import Unit


def _check_destinations(body: dict[str, Any]) -> None:
    """ApiError(404) for any destination id: no event destination exists here."""
    destination_ids = body.get("destination_ids") or []
    if destination_ids:
        raise ApiError(
            Code.REFERENCE_NOT_FOUND,
            f"No event destination with id {destination_ids[0]!r} in this account (this "
            "server has no event destinations).",
            field="destination_ids",
        )


def _types(body: dict[str, Any]) -> builtins.list[str]:
    """The event types of the body's `sources` (the schema makes them unique)."""
    return sorted(source["type"] for source in body.get("sources") or [])


def _new_sources(
    subscription: EventSubscription, types: Iterable[str]
) -> builtins.list[EventSource]:
    return [
        EventSource.new(
            subscription_id=subscription.id, type=type_, account_id=subscription.account_id
        )
        for type_ in types
    ]


async def create(body: Body = None) -> tuple[dict[str, Any], int]:
    body = body or {}
    _check_destinations(body)
    subscription = EventSubscription.new(
        id=ids.new_id(EventSubscription.PREFIX), account_id=auth.caller().account_id
    )
    crud.apply_patch(subscription, body, crud.DESCRIBED_FIELDS)
    sources = _new_sources(subscription, _types(body))
    async with db.write() as unit:
        await quotas.add(unit, subscription)  # inserted before its sources
        unit.add_all(sources)
    return subscription.to_api(sources), 201


async def get(id: str) -> dict[str, Any]:  # noqa: A002 - the spec's parameter name
    async with db.read() as unit:
        subscription = await crud.get_owned(unit, EventSubscription, auth.caller(), id)
        return subscription.to_api(await of_subscription(unit, subscription.id))


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
    """Renders the page's subscriptions with their sources (read for the page at once)."""
    found = await unit.select_in(EventSource, "subscription_id", [r.id for r in rows])
    sources: dict[str, builtins.list[EventSource]] = {row.id: [] for row in rows}
    for source in sorted(found, key=lambda s: s.type):
        sources[source.subscription_id].append(source)
    return lambda row: row.to_api(sources[row.id])


async def _replace_sources(
    unit: Unit, subscription: EventSubscription, types: builtins.list[str]
) -> builtins.list[EventSource]:
    """Make `types` the subscription's sources (removing the others); the sources by type."""
    kept: builtins.list[EventSource] = []
    for source in await of_subscription(unit, subscription.id):
        if source.type in types:
            kept.append(source)
        else:
            await unit.delete(source)
    have = {source.type for source in kept}
    added = _new_sources(subscription, [type_ for type_ in types if type_ not in have])
    unit.add_all(added)
    return sorted([*kept, *added], key=lambda source: source.type)


async def update(id: str, body: Body = None) -> dict[str, Any]:  # noqa: A002
    body = body or {}
    _check_destinations(body)
    async with db.write() as unit:
        subscription = await crud.get_managed(unit, EventSubscription, auth.caller(), id, lock=True)
        crud.apply_patch(subscription, body, crud.DESCRIBED_FIELDS)
        types = _types(body)
        if types:  # [] and null change nothing
            sources = await _replace_sources(unit, subscription, types)
        else:
            sources = await of_subscription(unit, subscription.id)
    return subscription.to_api(sources)


async def delete(id: str) -> tuple[None, int]:  # noqa: A002
    # The sources go with it (foreign key ON DELETE CASCADE).
    return await crud.delete_one(EventSubscription, id)
