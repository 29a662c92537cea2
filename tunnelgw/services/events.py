"""Events that fire: each create, update and delete of a kind in the event type catalog, made
by a write unit of a request, becomes an event (`ev_`, the platform's envelope) for each of
the account's subscriptions with that type as a source, recorded once with a delivery per
destination (`event_record`) in the change's own transaction, through the units' change
observer."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any, cast

from sqlalchemy import func, select
from sqlmodel import col

from tunnelgw import models
from tunnelgw.core import ids, settings, timefmt
from tunnelgw.models.event_delivery import DELIVERED, DESTINATION, FAILED, SUBSCRIPTION, Delivery
from tunnelgw.services import event_routes, faults
from tunnelgw.services.auth import UNREAD, Caller
from tunnelgw.services.bounds import WeightedBound
from tunnelgw.storage import db
from tunnelgw.storage import unit as units
from tunnelgw.storage.records import Record
from tunnelgw.storage.unit import Changes, Unit

if TYPE_CHECKING:
    from tunnelgw.models import EventRecord, FaultRule

EVENT_PREFIX = "ev"
CREATED, UPDATED, DELETED = "created", "updated", "deleted"

# Rows whose changes are their parent's update (a subscription's sources and destinations,
# a restriction's policies), by table: the parent's class and the column naming it. Tables are
# named here, not imported (as in `_RENDERERS`, `_ROUTING`, `DELIVERIES`): every server
# imports this module, and one whose accounts have no subscription never imports these
# tables (tunnelgw.models imports a table when first named; bench/README.md, issue 31).
_PARENTS: dict[str, tuple[str, str]] = {
    "event_source": ("EventSubscription", "subscription_id"),
    "event_subscription_destination": ("EventSubscription", "subscription_id"),
    "ip_restriction_policy": ("IpRestriction", "restriction_id"),
}


async def _subscription(unit: Unit, row: Any) -> dict[str, Any]:
    from tunnelgw.models.event_source import of_subscription
    from tunnelgw.models.event_subscription import destinations_of

    destinations = (await destinations_of(unit, [row.id]))[row.id]
    return row.to_api(await of_subscription(unit, row.id), destinations)  # type: ignore[no-any-return]


async def _restriction(unit: Unit, row: Any) -> dict[str, Any]:
    from tunnelgw.models.ip_restriction import policies_of

    return row.to_api((await policies_of(unit, [row.id]))[row.id])  # type: ignore[no-any-return]


async def _tunnel(unit: Unit, row: Any) -> dict[str, Any]:
    from tunnelgw.models.tunnel_group_member import backends_of

    return row.to_api(await backends_of(unit, row.id))  # type: ignore[no-any-return]


async def _backend(unit: Unit, row: Any) -> dict[str, Any]:
    from tunnelgw.models.tunnel_group_member import tunnels_of

    return row.to_api(await tunnels_of(unit, row.id))  # type: ignore[no-any-return]


async def _edge(unit: Unit, row: Any) -> dict[str, Any]:
    if row.kind != "https":
        return row.to_api()  # type: ignore[no-any-return]
    from tunnelgw.services import edges

    return row.to_api((await edges.routes_of(unit, [row.id]))[row.id])  # type: ignore[no-any-return]


# The API shape of the tables whose shape shows related rows (the others': `to_api()`); each
# renderer imports what it reads of other tables when it runs.
_RENDERERS: dict[str, Callable[[Unit, Any], Awaitable[dict[str, Any]]]] = {
    "event_subscription": _subscription,
    "ip_restriction": _restriction,
    "tunnel": _tunnel,
    "tunnel_group_backend": _backend,
    "edge": _edge,
}


def kind_of(row: Any) -> str | None:
    """The catalog kind of `row` (edges: by their kind), or None."""
    model = row.__model__
    if model.__tablename__ == "edge":
        return f"{row.kind}_edge"
    kind: str | None = getattr(model, "EVENT_KIND", None)
    return kind


@functools.cache
def _watched(model: type) -> bool:
    """Whether changes of `model`'s rows fire events (per model: tables load at first use)."""
    table = getattr(model, "__tablename__", None)
    return getattr(model, "EVENT_KIND", None) is not None or table == "edge" or table in _PARENTS


async def render(unit: Unit, row: Any) -> dict[str, Any]:
    """`row` as the API returns it (without a one-time secret such as a new key's token)."""
    renderer = _RENDERERS.get(row.__model__.__tablename__)
    return await renderer(unit, row) if renderer is not None else row.to_api()


# The columns of an event's row, in the order `_fire` writes them.
COLUMNS = (
    "id",
    "account_id",
    "created_at",
    "event_type",
    "event",
    "deliveries",
    "delivery_count",
    "route",
)
# An account's newest `event_deliveries_max` deliveries, in the order made (ids sort so).
DELIVERIES = WeightedBound(lambda: models.EventRecord, "account_id", "id", "delivery_count")


class _Change:
    __slots__ = ("action", "kind", "row", "shape")

    def __init__(self, kind: str, action: str, row: Any, shape: dict[str, Any] | None) -> None:
        self.kind = kind
        self.action = action
        self.row = row
        self.shape = shape  # a deleted row's API shape, taken before it went


class EventObserver:
    """The write units' change observer (tunnelgw.storage.unit.ChangeObserver) of requests.

    `account`: the account of the request's caller, with what its credential check read of
    it (`known`): its changes fire by its event `routes` as read then (without routes, they
    fire nothing and are not rendered), unless the unit writes what events are routed by (a
    subscription, its sources or destinations: the routes are then stored afresh and fire
    the unit's changes). Without `fault_rules` (it may have none), its deliveries read no
    fault rules. A subscription or rule made meanwhile by another request counts from the
    account's next request (as `faults.apply` does for the request itself)."""

    __slots__ = ("account", "fault_rules", "routes")

    def __init__(
        self,
        account: str | None = None,
        *,
        routes: str | None = UNREAD,
        fault_rules: bool = True,
    ) -> None:
        self.account = account
        self.routes = routes
        self.fault_rules = fault_rules

    def watches(self, model: type) -> bool:
        return _watched(model)

    def _quiet(self, row: Record) -> bool:
        return self.routes is None and getattr(row, "account_id", None) == self.account

    async def _routes(self, unit: Unit, account_id: str) -> event_routes.Routes:
        if account_id == self.account and self.routes != UNREAD:
            return event_routes.parse(self.routes)
        return await event_routes.stored(unit, account_id)

    async def deleting(self, unit: Unit, row: Record) -> Any:
        if row.__model__.__tablename__ in _PARENTS or kind_of(row) is None or self._quiet(row):
            return None
        return await render(unit, row)

    async def changed(self, unit: Unit, changes: Changes) -> None:
        rows = [*changes.created, *changes.updated, *(row for row, _ in changes.deleted)]
        if all(self._quiet(row) and row.__model__.__tablename__ not in _ROUTING for row in rows):
            return
        stored: dict[str, event_routes.Routes] = {}
        for account_id in sorted(
            {cast(Any, row).account_id for row in rows if row.__model__.__tablename__ in _ROUTING}
        ):
            stored[account_id] = await event_routes.store(unit, account_id)
        by_account: dict[str, list[_Change]] = {}
        for change in await _net(unit, changes):
            by_account.setdefault(change.row.account_id, []).append(change)
        for account_id, found in by_account.items():
            routes = stored.get(account_id)
            if routes is None:
                routes = await self._routes(unit, account_id)
            if routes:
                rules = self.fault_rules or account_id != self.account
                await _fire(unit, account_id, found, routes, rules=rules)


# The rows events are routed by: a unit that writes them stores the account's routes afresh
# (`event_routes.store`) and fires by them (the account's first subscription fires too).
_ROUTING = frozenset(("event_subscription", "event_source", "event_subscription_destination"))


async def _net(unit: Unit, changes: Changes) -> list[_Change]:
    """The changes of catalog kinds, a related row's change as its parent's update (unless
    the parent itself was created, updated or deleted here)."""
    found: list[_Change] = []
    seen: set[tuple[type, str]] = set()
    parents: list[tuple[str, str]] = []
    for action, rows in ((CREATED, changes.created), (UPDATED, changes.updated)):
        for row in rows:
            _note(found, seen, parents, action, row, None)
    for row, shape in changes.deleted:
        _note(found, seen, parents, DELETED, row, shape)
    for name, id_ in parents:
        model = getattr(models, name)
        if (model, id_) in seen:
            continue
        seen.add((model, id_))
        parent: Any = await unit.get(model, id_)
        if parent is not None:
            found.append(_Change(kind_of(parent) or "", UPDATED, parent, None))
    return found


def _note(
    found: list[_Change],
    seen: set[tuple[type, str]],
    parents: list[tuple[str, str]],
    action: str,
    row: Any,
    shape: dict[str, Any] | None,
) -> None:
    related = _PARENTS.get(row.__model__.__tablename__)
    if related is not None:
        parents.append((related[0], getattr(row, related[1])))
        return
    kind = kind_of(row)
    if kind is not None:
        seen.add((row.__model__, row.id))
        found.append(_Change(kind, action, row, shape))


async def _fire(
    unit: Unit,
    account_id: str,
    found: list[_Change],
    routes: event_routes.Routes,
    *,
    rules: bool,
) -> None:
    """Record the events of one account's changes, each once with its deliveries to the
    destinations its `routes` give (a fault rule may fail a delivery; `rules`: whether the
    account may have any)."""
    now = timefmt.utcnow()
    timestamp = timefmt.rfc3339(now)
    failing: list[FaultRule] | None = None if rules else []
    rows: list[tuple[Any, ...]] = []
    delivered = 0
    for change in found:
        type_ = f"{change.kind}_{change.action}.v0"
        route = routes.get(type_)
        if route is None:
            continue
        shape = change.shape if change.shape is not None else await render(unit, change.row)
        count = len(route.pairs)
        # The deliveries' ids are implied: the values reserved after the event's.
        event_id = ids.new_id(EVENT_PREFIX, reserve=count)
        event = {
            "event_id": event_id,
            "event_type": type_,
            "event_timestamp": timestamp,
            "object": shape,
        }
        if failing is None:
            failing = await faults.delivery_rules(unit, account_id)
        # All made: the route's, which its row holds (`EventRoute`; `event_routes.store`).
        deliveries: Any = None
        digest: str | None = route.digest
        if failing:  # sent (nothing leaves the machine): a fault rule may fail a delivery
            errors = [await faults.fail_delivery(unit, failing, t) for _, t in route.pairs]
            if any(error is not None for error in errors):
                digest = None
                deliveries = [  # EventRecord's STORED_FIELDS
                    [s, t, DELIVERED if e is None else FAILED, e]
                    for (s, t), e in zip(route.pairs, errors, strict=True)
                ]
        rows.append((event_id, account_id, now, type_, event, deliveries, count, digest))
        delivered += count
    if rows:
        await unit.insert_many(models.EventRecord, COLUMNS, rows)
        keep = settings.current().event_deliveries_max
        await DELIVERIES.wrote(unit, db.current(), account_id, delivered, keep)


OBSERVER = EventObserver()


class Filters:
    """Which recorded deliveries of an account to read (each None: any)."""

    __slots__ = ("destination_id", "since", "subscription_id", "type")

    def __init__(
        self,
        type_: str | None = None,
        destination_id: str | None = None,
        subscription_id: str | None = None,
        since: datetime | None = None,
    ) -> None:
        self.type = type_
        self.destination_id = destination_id
        self.subscription_id = subscription_id
        self.since = since

    def where(self, statement: Any, account_id: str, start: Any) -> Any:
        """`statement` over the account's events from id `start` on (None: all) that match
        the event's filters (type, since)."""
        statement = statement.where(col(models.EventRecord.account_id) == account_id)
        if start is not None:
            statement = statement.where(col(models.EventRecord.id) >= start)
        if self.type is not None:
            statement = statement.where(col(models.EventRecord.event_type) == self.type)
        if self.since is not None:
            statement = statement.where(col(models.EventRecord.created_at) >= self.since)
        return statement

    @property
    def per_delivery(self) -> bool:
        """Whether the filters look into deliveries (their destination or subscription)."""
        return self.destination_id is not None or self.subscription_id is not None

    def takes(self, delivery: Delivery) -> bool:
        """Whether the filters take `delivery` of an event they take."""
        return self.destination_id in (None, delivery[DESTINATION]) and (
            self.subscription_id in (None, delivery[SUBSCRIPTION])
        )


# Events read at a time: each holds at least one delivery.
_CHUNK = 500


async def _start(unit: Unit, account_id: str) -> tuple[Any, int]:
    """Where the account's newest `event_deliveries_max` deliveries start: the id of its
    oldest event kept and how many of that event's deliveries are past the bound, or (None,
    0) when it has fewer."""
    keep = settings.current().event_deliveries_max
    floor = await DELIVERIES.floor_and_excess(unit, account_id, keep)
    return floor if floor is not None else (None, 0)


async def _kept(
    unit: Unit, account_id: str, filters: Filters
) -> AsyncIterator[tuple[EventRecord, list[Delivery]]]:
    """The account's events that match `filters`, oldest first, each with its deliveries that
    match among the newest `event_deliveries_max`."""
    start, excess = await _start(unit, account_id)
    statement = filters.where(select(models.EventRecord), account_id, start)
    # The deliveries of the routes the account's events name (tunnelgw.models.event_route).
    from tunnelgw.models.event_route import of_account

    routes = {route.digest: route.deliveries for route in await of_account(unit, account_id)}
    after: str | None = None
    while True:
        chunk = statement if after is None else statement.where(col(models.EventRecord.id) > after)
        rows = (await unit.exec(chunk.order_by(col(models.EventRecord.id)).limit(_CHUNK))).all()
        for row in rows:
            # (A route's row outlives the events that name it; were it gone, they show none.)
            stored = row.deliveries if row.route is None else routes.get(row.route, [])
            deliveries = row.with_ids(stored)[excess:] if row.id == start else row.with_ids(stored)
            yield row, [item for item in deliveries if filters.takes(item)]
        if len(rows) < _CHUNK:
            return
        after = rows[-1].id


async def recorded(account_id: str, filters: Filters, limit: int) -> list[dict[str, Any]]:
    """The account's deliveries matching `filters` among its newest `event_deliveries_max`,
    oldest first, at most `limit`."""
    found: list[dict[str, Any]] = []
    async with db.read() as unit:
        async for row, deliveries in _kept(unit, account_id, filters):
            found += (row.delivery_api(item) for item in deliveries[: limit - len(found)])
            if len(found) >= limit:
                break
    return found


async def count(account_id: str, filters: Filters) -> int:
    """How many of the account's newest `event_deliveries_max` deliveries match `filters`."""
    async with db.read() as unit:
        if not filters.per_delivery:  # the events' counts, less the oldest's past the bound
            start, excess = await _start(unit, account_id)
            counted = select(func.coalesce(func.sum(col(models.EventRecord.delivery_count)), 0))
            total = int((await unit.exec(filters.where(counted, account_id, start))).one())
            if excess:  # unless the filters leave that event out
                oldest = filters.where(select(col(models.EventRecord.id)), account_id, start)
                if (await unit.exec(oldest.where(col(models.EventRecord.id) == start))).first():
                    total -= excess
            return total
        return sum([len(deliveries) async for _, deliveries in _kept(unit, account_id, filters)])


def activate() -> Any:
    """Make events fire for the write units of this task (a request); the token resets it."""
    return units.set_observer(OBSERVER)


def known(caller: Caller) -> None:
    """What the request's credential check read of the caller's account spares its changes
    reading it again (`EventObserver`): in this task (until `deactivate` resets the
    observer), a change of the account fires by the event routes read then (without, it
    fires nothing), a delivery of an account without fault rules reads none."""
    observer = EventObserver(
        caller.account_id, routes=caller.event_routes, fault_rules=caller.fault_rules
    )
    units.set_observer(observer)


def deactivate(token: Any) -> None:
    units.reset_observer(token)
