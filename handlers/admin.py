"""The admin API (`/_admin/`, tag `admin`): for test suites driving this server. Served only
with `--admin-api` (tunnelgw.http.app drops the paths otherwise); admin principals only; every
operation acts on the caller's own account."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import delete, select
from sqlmodel import col

from models import Account, FaultRule, TunnelSession
from tunnelgw.core import ids, settings, timefmt
from tunnelgw.core.errors import ApiError, Code
from tunnelgw.http import state
from tunnelgw.http.pipeline import bodies
from tunnelgw.services import agents, auth, crud, faults, quotas
from tunnelgw.services.auth import Caller
from tunnelgw.services.crud import Body
from tunnelgw.storage import db

# The fixture loader (and with it `cryptography`) loads at the first fixture request.

FIXTURE_NAME = "request body"  # how problem positions name the document
MAX_YEAR = 9000  # the clock stays where every timestamp can still be written


def _admin() -> Caller:
    caller = auth.caller()
    if not caller.is_admin:
        raise ApiError(Code.PERMISSION_DENIED, "The admin API is for admin principals only.")
    return caller


async def reset() -> dict[str, Any]:
    from tunnelgw import fixtures

    caller = _admin()
    deleted = await fixtures.reset(db.current(), caller.account_id)
    return {"account_id": caller.account_id, "deleted": deleted}


async def load_fixtures(body: Body = None) -> dict[str, Any]:
    from tunnelgw import fixtures

    caller = _admin()
    app_state = state.active()
    assert app_state is not None  # requests run under their app's state
    try:
        return await fixtures.load_document(
            app_state, bodies.raw_body.get(), FIXTURE_NAME, caller.account_id
        )
    except fixtures.FixtureError as exc:
        # `written`: an api item was refused after the rows before it were written.
        raise ApiError(
            Code.INVALID_FIXTURE,
            str(exc),
            problems=str(len(exc.issues)),
            written="true" if exc.written else "false",
        ) from None


# --- clock --------------------------------------------------------------------------------


def _clock(offset: int) -> dict[str, Any]:
    now = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=offset)
    return {"now": timefmt.rfc3339(now), "offset_seconds": offset}


async def get_clock() -> dict[str, Any]:
    caller = _admin()
    async with db.read() as unit:
        account = await unit.get(Account, caller.account_id)
    assert account is not None  # the caller's key names it
    return _clock(account.clock_offset_seconds)


async def set_clock(body: Body = None) -> dict[str, Any]:
    body = body or {}
    caller = _admin()
    async with db.write() as unit:
        account = await unit.get(Account, caller.account_id, lock=True)
        assert account is not None  # the caller's key names it
        real = datetime.now(UTC)
        offset = account.clock_offset_seconds
        if body.get("reset"):
            offset = 0
        elif "advance_seconds" in body:
            offset += body["advance_seconds"]
            _check_year(real, offset, "advance_seconds")
        else:
            target = _parse(body["set"])
            current = real + timedelta(seconds=offset)
            if target < current.replace(microsecond=0):
                raise ApiError(
                    Code.INVALID_FIELD,
                    f"set {body['set']!r} is before the clock's current time "
                    f"{timefmt.rfc3339(current)}; the clock never moves backwards "
                    '(send {"reset": true} to go back to the real time).',
                    field="set",
                )
            wanted = math.ceil((target - real.replace(microsecond=0)).total_seconds())
            offset = max(offset, wanted)
            _check_year(real, offset, "set")
        account.clock_offset_seconds = offset
    timefmt.clock_offset.set(timedelta(seconds=offset) if offset else None)
    return _clock(offset)


def _parse(value: str) -> datetime:
    try:
        return timefmt.parse_rfc3339(value).astimezone(UTC)
    except ValueError:
        raise ApiError(
            Code.INVALID_FIELD,
            f"set {value[:64]!r} is not an RFC 3339 time (such as 2030-01-01T00:00:00Z; an "
            "offset is -23:59 to +23:59).",
            field="set",
        ) from None


def _check_year(real: datetime, offset: int, field: str) -> None:
    if offset > (datetime(MAX_YEAR, 1, 1, tzinfo=UTC) - real).total_seconds():
        raise ApiError(
            Code.INVALID_FIELD, f"The clock cannot go past the year {MAX_YEAR}.", field=field
        )


# --- faults -------------------------------------------------------------------------------


async def create_fault(body: Body = None) -> tuple[dict[str, Any], int]:
    body = body or {}
    caller = _admin()
    async with db.write() as unit:
        # The same count and lock as the quotas of the API's resources, with a fixed limit.
        await quotas.admit(unit, FaultRule, caller.account_id, limit=faults.MAX_RULES)
        rule = FaultRule.new(
            id=ids.new_id(FaultRule.PREFIX),
            account_id=caller.account_id,
            operation=body["operation"],
            status=body.get("status"),
            latency_ms=body.get("latency_ms") or 0,
            probability=float(body.get("probability", 1.0)),
            remaining=body.get("count"),
        )
        unit.add(rule)
    return rule.to_api(), 201


async def list_faults() -> dict[str, Any]:
    caller = _admin()
    async with db.read() as unit:
        rules = (
            await unit.exec(
                select(FaultRule)
                .where(col(FaultRule.account_id) == caller.account_id)
                .order_by(col(FaultRule.id))
            )
        ).all()
    return {"faults": [rule.to_api() for rule in rules]}


async def clear_faults() -> tuple[None, int]:
    caller = _admin()
    async with db.write() as unit:
        await unit.exec(delete(FaultRule).where(col(FaultRule.account_id) == caller.account_id))
    return None, 204


# --- simulated agents ---------------------------------------------------------------------


async def connect_agent(body: Body = None) -> tuple[dict[str, Any], int]:
    body = body or {}
    caller = _admin()
    agent = agents.Agent(
        authtoken=body["authtoken"],
        ip=body.get("ip", "127.0.0.1"),
        agent_version=body.get("agent_version") or settings.current().agent_latest_version,
        os=body.get("os", "linux"),
        region=body.get("region", "us"),
        metadata=body.get("metadata") or "",
    )
    wanted = [agents.wanted(index, item) for index, item in enumerate(body.get("endpoints", []))]
    async with db.write() as unit:
        started = await agents.connect(unit, caller.account_id, agent, wanted)
        answer = await agents.started_api(unit, started)
    return answer, 201


async def disconnect_agent(id: str) -> tuple[None, int]:  # noqa: A002 - the spec's name
    caller = _admin()
    async with db.write() as unit:
        session = await crud.get_owned(unit, TunnelSession, caller, id, lock=True)
        await agents.end(unit, session)
    return None, 204


# --- snapshots ----------------------------------------------------------------------------


async def snapshot(include_secrets: bool = False) -> dict[str, Any]:
    from tunnelgw.services import snapshots

    caller = _admin()
    async with db.write() as unit:  # one transaction: one state (nothing is written)
        taken = await snapshots.take(unit, caller.account_id, include_secrets=include_secrets)
    return {"version": 1, "snapshot": taken}
