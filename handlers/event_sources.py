"""Event sources (`/event_subscriptions/{subscription_id}/sources`): spec section 4.12.

A source is keyed by its subscription and type (one per catalog type); the subscription must
be the caller's (else 404). There is nothing to update, and the list has no paging.
"""

from __future__ import annotations

from typing import Any

from tunnelgw.core import urls
from tunnelgw.core.errors import ApiError, Code
from tunnelgw.models import EventSource, EventSubscription
from tunnelgw.models.event_source import check_fields, of_subscription, sources_path
from tunnelgw.services import auth, crud, listing
from tunnelgw.services.crud import Body
from tunnelgw.storage import db
from tunnelgw.storage.unit import Unit


async def _subscription(unit: Unit, subscription_id: str) -> EventSubscription:
    """The caller's subscription; ApiError(404) if unknown or another account's."""
    return await crud.get_owned(unit, EventSubscription, auth.caller(), subscription_id)


async def _source(unit: Unit, subscription_id: str, type_: str) -> EventSource:
    """The source `type_` of the caller's subscription; ApiError(404) if there is none."""
    subscription = await _subscription(unit, subscription_id)
    source = await unit.get(EventSource, (subscription.id, type_))
    if source is None:
        raise ApiError(
            Code.NOT_FOUND,
            f"The event subscription {subscription_id!r} has no source of type {type_!r}.",
            id=subscription_id,
            type=type_,
        )
    return source


async def create(subscription_id: str, body: Body = None) -> tuple[dict[str, Any], int]:
    type_ = (body or {})["type"]  # required by the schema
    fields = check_fields(body or {}, "fields")
    async with db.write() as unit:
        subscription = await _subscription(unit, subscription_id)
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
    return source.to_api(), 201


async def get(subscription_id: str, type: str) -> dict[str, Any]:  # noqa: A002
    async with db.read() as unit:
        return (await _source(unit, subscription_id, type)).to_api()


async def list(subscription_id: str, filter: str | None = None) -> dict[str, Any]:  # noqa: A002
    matches = listing.compile_for(filter, "EventSource").matches if filter is not None else None
    async with db.read() as unit:
        subscription = await _subscription(unit, subscription_id)
        sources = await of_subscription(unit, subscription.id)
    items = [source.to_api() for source in sources]
    return {
        "sources": items if matches is None else [item for item in items if matches(item)],
        "uri": urls.absolute(sources_path(subscription_id)),
    }


async def update(subscription_id: str, type: str, body: Body = None) -> dict[str, Any]:  # noqa: A002
    # The schema admits only `{}`: an event source has no updatable field.
    async with db.read() as unit:
        return (await _source(unit, subscription_id, type)).to_api()


async def delete(subscription_id: str, type: str) -> tuple[None, int]:  # noqa: A002
    async with db.write() as unit:
        await unit.delete(await _source(unit, subscription_id, type))
    return None, 204
