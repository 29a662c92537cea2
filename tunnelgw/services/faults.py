"""Fault injection (the admin API's `/_admin/faults`): the rules of an account make its
requests to one operation slow, or answer them with a catalog error marked
`details.injected`, so test suites can exercise their clients' retry logic.

Rules live in the database (`fault_rule`), so every worker applies and counts down the same
rules. The pipeline asks `apply` only while the admin API is on, after a request passed its
checks and before its handler runs; a rule that hits with a status ends the request there,
so nothing of the operation is done.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

from sqlalchemy import bindparam, delete, select, update
from sqlmodel import col

from models import FaultRule
from tunnelgw.core import ids
from tunnelgw.core.errors import ApiError, Code
from tunnelgw.storage import db
from tunnelgw.storage.statements import Query

MAX_RULES = 100
STATUS_CODES = {429: Code.RATE_LIMITED, 500: Code.INTERNAL, 503: Code.SERVICE_UNAVAILABLE}

_RULES = Query(
    select(FaultRule)
    .where(col(FaultRule.account_id) == bindparam("account"))
    .where(col(FaultRule.operation) == bindparam("operation"))
    .order_by(col(FaultRule.id))
)
# Take one of a counted rule's hits; a rule whose last hit is taken goes.
_TAKE = Query(
    update(FaultRule)
    .where(col(FaultRule.id) == bindparam("rule"))
    .where(col(FaultRule.remaining) > 0)
    .values(remaining=col(FaultRule.remaining) - 1)
)
_SPENT = Query(
    delete(FaultRule)
    .where(col(FaultRule.id) == bindparam("rule"))
    .where(col(FaultRule.remaining) <= 0)
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
        taken = (await unit.exec(_TAKE, {"rule": rule_id})).rowcount == 1
        if taken:
            await unit.exec(_SPENT, {"rule": rule_id})
    return taken
