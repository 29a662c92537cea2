"""Fault injection (the admin API's `/_admin/faults`): the rules of an account make its
requests to one operation slow, or answer them with a catalog error marked
`details.injected`, so test suites can exercise their clients' retry logic.

Rules live in the database (`fault_rule`), so every worker applies and counts down the same
rules. The pipeline asks `apply` only while the admin API is on, after a request passed its
checks and before its handler runs; a rule that hits with a status ends the request there,
so nothing of the operation is done.

A rule for the pseudo-operation `event_destinations.deliver` (optionally of one destination)
fails event deliveries instead (tunnelgw.services.events): the delivery is recorded as failed
with the rule's status; the change that fired the event still succeeds.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

from sqlalchemy import bindparam, delete, select, update
from sqlmodel import col

from tunnelgw import models
from tunnelgw.core import ids
from tunnelgw.core.errors import ApiError, Code
from tunnelgw.services import crud, quotas
from tunnelgw.services.auth import Caller
from tunnelgw.storage import db
from tunnelgw.storage.statements import Query
from tunnelgw.storage.unit import Unit

MAX_RULES = 100
# The pseudo-operation of a rule that fails event deliveries instead of requests.
DELIVER = "event_destinations.deliver"
STATUS_CODES = {429: Code.RATE_LIMITED, 500: Code.INTERNAL, 503: Code.SERVICE_UNAVAILABLE}

# The tables are named when the statements are first run: every server imports this module,
# and one that injects no fault never imports `fault_rule` (tunnelgw.models).
_RULES = Query(
    lambda: (
        select(models.FaultRule)
        .where(col(models.FaultRule.account_id) == bindparam("account"))
        .where(col(models.FaultRule.operation) == bindparam("operation"))
        .order_by(col(models.FaultRule.id))
    )
)
# Take one of a counted rule's hits; a rule whose last hit is taken goes.
_TAKE = Query(
    lambda: (
        update(models.FaultRule)
        .where(col(models.FaultRule.id) == bindparam("rule"))
        .where(col(models.FaultRule.remaining) > 0)
        .values(remaining=col(models.FaultRule.remaining) - 1)
    )
)
_SPENT = Query(
    lambda: (
        delete(models.FaultRule)
        .where(col(models.FaultRule.id) == bindparam("rule"))
        .where(col(models.FaultRule.remaining) <= 0)
    )
)


async def apply(account_id: str, operation_id: str) -> None:
    """Apply the account's rules for `operation_id`: sleep their latency; raise the injected
    error of the first one with a status that hits."""
    async with db.read() as unit:
        rules = (await unit.exec(_RULES, {"account": account_id, "operation": operation_id})).all()
    for rule in rules:
        if rule.probability < 1 and ids.random_source("faults").random() >= rule.probability:
            continue
        if rule.remaining is not None and not await _take(rule.id):
            continue  # another request took its last hit
        if rule.latency_ms:
            await asyncio.sleep(timedelta(milliseconds=rule.latency_ms).total_seconds())
        if rule.status is not None:
            code = STATUS_CODES[rule.status]
            raise ApiError(
                code,
                f"{code.message} (injected by fault rule {rule.id})",
                injected="true",
                rule=rule.id,
            )


async def _take(rule_id: str) -> bool:
    async with db.write() as unit:
        return await _take_in(unit, rule_id)


async def _take_in(unit: Unit, rule_id: str) -> bool:
    taken = (await unit.exec(_TAKE, {"rule": rule_id})).rowcount == 1
    if taken:
        await unit.exec(_SPENT, {"rule": rule_id})
    return taken


async def delivery_rules(unit: Unit, account_id: str) -> list[models.FaultRule]:
    """The account's rules that fail event deliveries, in creation order."""
    return list((await unit.exec(_RULES, {"account": account_id, "operation": DELIVER})).all())


async def fail_delivery(
    unit: Unit, rules: list[models.FaultRule], destination_id: str
) -> dict[str, Any] | None:
    """The error of the first of `rules` that hits a delivery to `destination_id` (its hit
    taken in `unit`, the transaction of the change that fired the event), or None."""
    for rule in rules:
        if rule.destination_id not in (None, destination_id) or rule.status is None:
            continue
        if rule.probability < 1 and ids.random_source("faults").random() >= rule.probability:
            continue
        if rule.remaining is not None and not await _take_in(unit, rule.id):
            continue  # its last hit is taken
        return {
            "status_code": rule.status,
            "error_code": STATUS_CODES[rule.status].error_code,
            "rule": rule.id,
        }
    return None


# --- the rules of an account (`/_admin/faults`) --------------------------------------------


async def add_rule(
    caller: Caller, body: dict[str, Any], destination_id: str | None
) -> models.FaultRule:
    """A rule of the body for the caller's account (at most MAX_RULES; a destination named
    must be the caller's: 404 ERR_REFERENCE_NOT_FOUND); the account marked as having rules,
    so the credential check tells its requests to read them."""
    async with db.write() as unit:
        if destination_id is not None:
            await crud.get_reference(
                unit, models.EventDestination, caller, destination_id, "destination_id"
            )
        # The same count and lock as the quotas of the API's resources, with a fixed limit.
        await quotas.admit(unit, models.FaultRule, caller.account_id, limit=MAX_RULES)
        account = await unit.get(models.Account, caller.account_id, lock="no key")
        assert account is not None  # the caller's key names it
        account.fault_rules = True
        rule = models.FaultRule.new(
            id=ids.new_id(models.FaultRule.PREFIX),
            account_id=caller.account_id,
            operation=body["operation"],
            destination_id=destination_id,
            status=body.get("status"),
            latency_ms=body.get("latency_ms") or 0,
            probability=float(body.get("probability", 1.0)),
            remaining=body.get("count"),
        )
        unit.add(rule)
    return rule


async def rules(account_id: str) -> list[models.FaultRule]:
    """The account's rules, oldest first."""
    async with db.read() as unit:
        found = await unit.exec(
            select(models.FaultRule)
            .where(col(models.FaultRule.account_id) == account_id)
            .order_by(col(models.FaultRule.id))
        )
        return list(found.all())


async def clear(account_id: str) -> None:
    """The account's rules removed, and its mark of having some."""
    async with db.write() as unit:
        await unit.exec(
            delete(models.FaultRule).where(col(models.FaultRule.account_id) == account_id)
        )
        await unit.exec(
            update(models.Account)
            .where(col(models.Account.id) == account_id)
            .values(fault_rules=False)
        )
