"""Event sources (`/event_subscriptions/{subscription_id}/sources`): spec section 4.12.

A source is keyed by its subscription and type (one per catalog type); the subscription must
be the caller's (else 404). There is nothing to update, and the list has no paging
(tunnelgw.services.event_subscriptions stores them).
"""

from __future__ import annotations

from typing import Any

from tunnelgw.core import urls
from tunnelgw.models.event_source import check_fields, sources_path
from tunnelgw.services import event_subscriptions, listing
from tunnelgw.services.auth import Caller
from tunnelgw.services.crud import Body


async def create(
    caller: Caller, subscription_id: str, body: Body = None
) -> tuple[dict[str, Any], int]:
    type_ = (body or {})["type"]  # required by the schema
    fields = check_fields(body or {}, "fields")
    source = await event_subscriptions.add_source(caller, subscription_id, type_, fields)
    return source.to_api(), 201


async def get(caller: Caller, subscription_id: str, type: str) -> dict[str, Any]:  # noqa: A002
    return (await event_subscriptions.source(caller, subscription_id, type)).to_api()


async def list(caller: Caller, subscription_id: str, filter: str | None = None) -> dict[str, Any]:  # noqa: A002
    matches = listing.compile_for(filter, "EventSource").matches if filter is not None else None
    sources = await event_subscriptions.sources(caller, subscription_id)
    items = [source.to_api() for source in sources]
    return {
        "sources": items if matches is None else [item for item in items if matches(item)],
        "uri": urls.absolute(sources_path(subscription_id)),
    }


async def update(
    caller: Caller,
    subscription_id: str,
    type: str,  # noqa: A002
    body: Body = None,
) -> dict[str, Any]:
    # The schema admits only `{}`: an event source has no updatable field.
    return await get(caller, subscription_id, type)


async def delete(caller: Caller, subscription_id: str, type: str) -> tuple[None, int]:  # noqa: A002
    await event_subscriptions.remove_source(caller, subscription_id, type)
    return None, 204
