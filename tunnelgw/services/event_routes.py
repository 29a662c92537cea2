"""An account's event routes: the (subscription, destination) pairs each event type goes to,
from its subscriptions' sources and destinations. They are kept on the account's row
(`Account.event_routes`, JSON text) by the unit that changes them (`store`, called by the
events' change observer), so the credential check reads them with the account and a change
fires by them without reading the subscriptions (bench/README.md, issue 31).

A request goes by the routes its credential check read, as it does by the account's fault
rules: a subscription made or removed meanwhile by another request counts from the account's
next request.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import orjson
from sqlalchemy import bindparam, select
from sqlmodel import col

from tunnelgw import models
from tunnelgw.models.event_delivery import DELIVERED
from tunnelgw.storage.records import JsonText, json_text
from tunnelgw.storage.statements import Query
from tunnelgw.storage.unit import Unit


class Route:
    """Where one event type goes: its (subscription, destination) `pairs`, and `delivered`,
    the deliveries of an event to them when none fails, as stored (EventRecord's
    STORED_FIELDS), encoded once per process per routes text (`parse`): an event's
    deliveries then cost nothing to build or encode unless a fault rule may fail one."""

    __slots__ = ("delivered", "pairs")

    def __init__(self, pairs: tuple[tuple[str, str], ...]) -> None:
        self.pairs = pairs
        stored = [
            [subscription, destination, DELIVERED, None] for subscription, destination in pairs
        ]
        self.delivered = JsonText(json_text(stored))


# Each event type's route.
Routes = Mapping[str, Route]

# Each (event type, subscription, destination) of an account (the index on event sources'
# account and type serves it), in the order the routes keep them. Built at its first run,
# with the two tables: a server without subscriptions never imports them.
_ROUTES = Query(
    lambda: (
        select(  # type: ignore[call-overload]
            models.EventSource.type,
            models.EventSource.subscription_id,
            models.EventSubscriptionDestination.destination_id,
        )
        .join(
            models.EventSubscriptionDestination,
            col(models.EventSubscriptionDestination.subscription_id)
            == col(models.EventSource.subscription_id),
        )
        .where(col(models.EventSource.account_id) == bindparam("account"))
        .order_by(
            col(models.EventSource.subscription_id),
            col(models.EventSubscriptionDestination.destination_id),
        )
    )
)
_STORED = Query(
    select(col(models.Account.event_routes)).where(col(models.Account.id) == bindparam("account"))
)


@functools.lru_cache(maxsize=1024)
def parse(text: str | None) -> Routes:
    """The routes of their stored text (None: none); parsed once per process per text."""
    if text is None:
        return {}
    found: dict[str, list[list[str]]] = orjson.loads(text)
    return {
        type_: Route(tuple((pair[0], pair[1]) for pair in pairs)) for type_, pairs in found.items()
    }


async def store(unit: Unit, account_id: str) -> Routes:
    """Read the account's routes from its subscriptions and keep them on its row (written with
    the unit's changes). The row is locked first (PostgreSQL `FOR NO KEY UPDATE`): the units
    that change an account's routes at the same time store them one after the other, each
    reading what the one before committed. (`FOR UPDATE` would also wait for every unit that
    inserted a row of the account, as these units have: two of them deadlocked.)"""
    account = await unit.get(models.Account, account_id, lock="no key")
    if account is None:  # deleted in this unit: nothing to keep
        return {}
    routes: dict[str, list[list[str]]] = {}
    for type_, subscription_id, destination_id in (
        await unit.exec(_ROUTES, {"account": account_id})
    ).all():
        routes.setdefault(type_, []).append([subscription_id, destination_id])
    text = orjson.dumps(routes).decode() if routes else None
    account.event_routes = text
    return parse(text)


async def stored(unit: Unit, account_id: str) -> Routes:
    """The account's routes as kept on its row."""
    text: Any = (await unit.exec(_STORED, {"account": account_id})).first()
    return parse(text)
