"""An account's event routes: the (subscription, destination) pairs each event type goes to,
from its subscriptions' sources and destinations. They are kept on the account's row
(`Account.event_routes`, JSON text) by the unit that changes them (`store`, called by the
events' change observer), so the credential check reads them with the account and a change
fires by them without reading the subscriptions (bench/README.md, issue 31). With them, each
route's deliveries are kept once (`EventRoute`), for the events recorded along it to name.

A request goes by the routes its credential check read, as it does by the account's fault
rules: a subscription made or removed meanwhile by another request counts from the account's
next request.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import orjson
from sqlalchemy import bindparam, select
from sqlmodel import col

from tunnelgw import models
from tunnelgw.models.event_delivery import DELIVERED, RETIRED_FOR, digest_of
from tunnelgw.storage.statements import Query
from tunnelgw.storage.unit import Unit


class Route:
    """Where one event type goes: its (subscription, destination) `pairs`; `stored`, the
    deliveries of an event to them when none fails, as stored (EventRecord's STORED_FIELDS),
    which the route's row keeps (`EventRoute`, by `digest`). Made once per process per routes
    text (`parse`): an event all of whose deliveries are made names the route's digest, and
    its deliveries cost nothing to build or store unless a fault rule may fail one."""

    __slots__ = ("digest", "pairs", "stored")

    def __init__(self, pairs: tuple[tuple[str, str], ...]) -> None:
        self.pairs = pairs
        self.stored = [
            [subscription, destination, DELIVERED, None] for subscription, destination in pairs
        ]
        self.digest = digest_of(pairs)


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
# The routes the account's recorded events name.
_NAMED = Query(
    lambda: (
        select(col(models.EventRecord.route))
        .distinct()
        .where(col(models.EventRecord.account_id) == bindparam("account"))
        .where(col(models.EventRecord.route).is_not(None))
    )
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
    parsed = parse(text)
    await _keep(unit, account_id, parsed)
    return parsed


async def _keep(unit: Unit, account_id: str, routes: Routes) -> None:
    """Give each of the account's `routes` its row (EventRoute), a retired one back; retire
    the rows of routes it no longer has, and delete those retired for `RETIRED_FOR` that no
    recorded event names (the unit holds the account's row: `store`)."""
    now = datetime.now(UTC)
    given = {route.digest: route for route in routes.values()}
    retired: list[Any] = []
    from tunnelgw.models.event_route import of_account  # the table, at its first use

    for row in await of_account(unit, account_id):
        if given.pop(row.digest, None) is not None:
            if row.retired_at is not None:
                row.retired_at = None
        elif row.retired_at is None:
            row.retired_at = now
        elif row.retired_at <= now - RETIRED_FOR:
            retired.append(row)
    for digest, route in given.items():
        unit.add(
            models.EventRoute.new(account_id=account_id, digest=digest, deliveries=route.stored)
        )
    if retired:
        named = set((await unit.exec(_NAMED, {"account": account_id})).all())
        for row in retired:
            if row.digest not in named:
                await unit.delete(row)


async def stored(unit: Unit, account_id: str) -> Routes:
    """The account's routes as kept on its row."""
    text: Any = (await unit.exec(_STORED, {"account": account_id})).first()
    return parse(text)
