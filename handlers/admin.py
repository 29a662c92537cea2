"""The admin API (`/_admin/`, tag `admin`): for test suites driving this server. Served only
with `--admin-api` (tunnelgw.http.app drops the paths otherwise); admin principals only; every
operation acts on the caller's own account, but the account operations (`/_admin/accounts`),
which take the operator token instead (tunnelgw.services.accounts.operator_info)."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from typing import Any

from tunnelgw.core import settings, timefmt
from tunnelgw.core.errors import ApiError, Code
from tunnelgw.http import state
from tunnelgw.models import Account
from tunnelgw.services import (
    accounts,
    agents,
    events,
    faults,
    journal,
    paging,
)
from tunnelgw.services.auth import Caller
from tunnelgw.services.crud import Body
from tunnelgw.services.faults import DELIVER

# The fixture loader (and with it `cryptography`) loads at the first fixture request.

FIXTURE_NAME = "request body"  # how problem positions name the document
MAX_YEAR = 9000  # the clock stays where every timestamp can still be written


def _admin(caller: Caller) -> Caller:
    """The caller, when an admin; ApiError(403) else."""
    if not caller.is_admin:
        raise ApiError(Code.PERMISSION_DENIED, "The admin API is for admin principals only.")
    return caller


async def reset(
    caller: Caller,
) -> dict[str, Any]:
    from tunnelgw import seeding

    caller = _admin(caller)
    app_state = state.active()
    assert app_state is not None  # requests run under their app's state
    deleted = await seeding.reset(app_state.database, caller.account_id)
    return {"account_id": caller.account_id, "deleted": deleted}


async def load_fixtures(caller: Caller, raw_body: bytes, body: Body = None) -> dict[str, Any]:
    from tunnelgw import seeding

    caller = _admin(caller)
    app_state = state.active()
    assert app_state is not None  # requests run under their app's state
    try:
        return await seeding.load_document(app_state, raw_body, FIXTURE_NAME, caller.account_id)
    except seeding.FixtureError as exc:
        # `written`: an api item was refused after the rows before it were written.
        raise _fixture_error(exc) from None


# --- accounts (the operator's token) ------------------------------------------------------

ACCOUNT_FIXTURE = "fixture"  # the member of the create body holding a document to load


def _account(account: Account) -> dict[str, Any]:
    return {
        "id": account.id,
        "name": account.name,
        "created_at": timefmt.rfc3339(account.created_at),
    }


async def create_account(raw_body: bytes, body: Body = None) -> tuple[dict[str, Any], int]:
    from tunnelgw import seeding

    body = body or {}
    plan = None
    if body.get(ACCOUNT_FIXTURE) is not None:
        try:  # checked before anything is written: a bad document creates no account
            plan, text = seeding.check_member(raw_body, FIXTURE_NAME, ACCOUNT_FIXTURE)
        except seeding.FixtureError as exc:
            raise _fixture_error(exc) from None
    account, created = await accounts.open_account(body.get("name") or "")
    answer = _account(account) | {
        "admin_user_id": created.principal_id,
        "api_key_id": created.api_key_id,
        "token": created.token,
        "fixture": None,
    }
    if plan is not None:
        app_state = state.active()
        assert app_state is not None  # requests run under their app's state
        try:
            answer["fixture"] = await seeding.load_plan(
                app_state, plan, text, created.account_id, once=False
            )
        except seeding.FixtureError as exc:
            await accounts.drop_account(created.account_id)  # with the document, or none
            raise _fixture_error(exc, written=False) from None
        except BaseException:
            await accounts.drop_account(created.account_id)
            raise
    return answer, 201


def _fixture_error(exc: Any, *, written: bool | None = None) -> ApiError:
    done = exc.written if written is None else written
    return ApiError(
        Code.INVALID_FIXTURE,
        str(exc),
        problems=str(len(exc.issues)),
        written="true" if done else "false",
    )


async def list_accounts(limit: int = 100, before_id: str | None = None) -> dict[str, Any]:
    rows, more = await accounts.page(limit, before_id)
    return paging.envelope("accounts", "/_admin/accounts", rows, limit, more=more, render=_account)


async def delete_account(id: str) -> dict[str, Any]:  # noqa: A002 - the spec's name
    deleted = await accounts.drop_account(id)
    if deleted is None:
        raise ApiError(Code.NOT_FOUND, f"No account {id!r}.", id=id)
    return {"account_id": id, "deleted": deleted}


# --- clock --------------------------------------------------------------------------------


def _clock(offset: int) -> dict[str, Any]:
    now = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=offset)
    return {"now": timefmt.rfc3339(now), "offset_seconds": offset}


async def get_clock(
    caller: Caller,
) -> dict[str, Any]:
    return _clock(await accounts.clock_offset(_admin(caller).account_id))


async def set_clock(caller: Caller, body: Body = None) -> dict[str, Any]:
    body = body or {}
    caller = _admin(caller)

    def moved(offset: int) -> int:
        real = datetime.now(UTC)
        if body.get("reset"):
            return 0
        if "advance_seconds" in body:
            offset += body["advance_seconds"]
            _check_year(real, offset, "advance_seconds")
            return offset
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
        return offset

    offset = await accounts.move_clock(caller.account_id, moved)
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


async def create_fault(caller: Caller, body: Body = None) -> tuple[dict[str, Any], int]:
    body = body or {}
    caller = _admin(caller)
    destination_id = _check_delivery_rule(body)
    rule = await faults.add_rule(caller, body, destination_id)
    return rule.to_api(), 201


async def list_faults(
    caller: Caller,
) -> dict[str, Any]:
    rules = await faults.rules(_admin(caller).account_id)
    return {"faults": [rule.to_api() for rule in rules]}


async def clear_faults(
    caller: Caller,
) -> tuple[None, int]:
    await faults.clear(_admin(caller).account_id)
    return None, 204


# --- simulated agents ---------------------------------------------------------------------


async def connect_agent(caller: Caller, body: Body = None) -> tuple[dict[str, Any], int]:
    body = body or {}
    caller = _admin(caller)
    agent = agents.Agent(
        authtoken=body["authtoken"],
        ip=body.get("ip", "127.0.0.1"),
        agent_version=body.get("agent_version") or settings.current().agent_latest_version,
        os=body.get("os", "linux"),
        region=body.get("region", "us"),
        metadata=body.get("metadata") or "",
    )
    wanted = [agents.wanted(index, item) for index, item in enumerate(body.get("endpoints", []))]
    return await agents.connect_now(caller.account_id, agent, wanted), 201


async def disconnect_agent(caller: Caller, id: str) -> tuple[None, int]:  # noqa: A002 - the spec's name
    await agents.command(_admin(caller), id, agents.end)
    return None, 204


# --- events -------------------------------------------------------------------------------


def _check_delivery_rule(body: dict[str, Any]) -> str | None:
    """A fault rule on event deliveries fails them (a status, no latency) and may name one
    destination; a rule on an operation names none. The destination named, or None."""
    destination_id: str | None = body.get("destination_id")
    if body["operation"] != DELIVER:
        if destination_id is not None:
            raise ApiError(
                Code.INVALID_FIELD,
                f"destination_id is for rules on {DELIVER} only.",
                field="destination_id",
            )
        return None
    if body.get("status") is None:
        raise ApiError(Code.MISSING_FIELD, f"A rule on {DELIVER} needs a status.", field="status")
    if body.get("latency_ms"):
        raise ApiError(
            Code.INVALID_FIELD,
            f"A rule on {DELIVER} has no latency (deliveries do not delay the change).",
            field="latency_ms",
        )
    return destination_id


def _event_filters(
    type: str | None,  # noqa: A002 - the spec's parameter name
    destination_id: str | None,
    subscription_id: str | None,
    since: str | None,
) -> events.Filters:
    return events.Filters(type, destination_id, subscription_id, _since(since))


async def list_events(
    caller: Caller,
    type: str | None = None,  # noqa: A002 - the spec's parameter name
    destination_id: str | None = None,
    subscription_id: str | None = None,
    since: str | None = None,
    limit: int = 1000,
) -> dict[str, Any]:
    caller = _admin(caller)
    filters = _event_filters(type, destination_id, subscription_id, since)
    return {"events": await events.recorded(caller.account_id, filters, limit)}


async def count_events(
    caller: Caller,
    type: str | None = None,  # noqa: A002 - the spec's parameter name
    destination_id: str | None = None,
    subscription_id: str | None = None,
    since: str | None = None,
) -> dict[str, Any]:
    caller = _admin(caller)
    filters = _event_filters(type, destination_id, subscription_id, since)
    return {"count": await events.count(caller.account_id, filters)}


# --- the records of the account: its request journal and its events ---------------------


def _since(since: str | None) -> datetime | None:
    """The `since` filter of the journal's and the events' reads (RFC 3339), or None."""
    if since is None:
        return None
    try:
        return timefmt.parse_rfc3339(since).astimezone(UTC)
    except (ValueError, OverflowError):  # overflow: an offset past year 1 or 9999
        raise ApiError(
            Code.INVALID_PARAMETER,
            f"since {since[:64]!r} is not an RFC 3339 time (such as 2030-01-01T00:00:00Z; "
            "an offset is -23:59 to +23:59).",
            param="since",
        ) from None


def _journal_match(
    operation: str | None,
    method: str | None,
    path_prefix: str | None,
    status: str | None,
    error_code: str | None,
    since: str | None,
) -> journal.Match:
    return journal.Match(operation, method, path_prefix, status, error_code, _since(since))


async def list_requests(
    caller: Caller,
    operation: str | None = None,
    method: str | None = None,
    path_prefix: str | None = None,
    status: str | None = None,
    error_code: str | None = None,
    since: str | None = None,
    limit: int = 1000,
) -> dict[str, Any]:
    caller = _admin(caller)
    match = _journal_match(operation, method, path_prefix, status, error_code, since)
    keep = settings.current().journal_max_entries
    found = await journal.entries(caller.account_id, match, limit, keep)
    return {"requests": [entry.to_api() for entry in found]}


async def count_requests(
    caller: Caller,
    operation: str | None = None,
    method: str | None = None,
    path_prefix: str | None = None,
    status: str | None = None,
    error_code: str | None = None,
    since: str | None = None,
) -> dict[str, Any]:
    caller = _admin(caller)
    match = _journal_match(operation, method, path_prefix, status, error_code, since)
    keep = settings.current().journal_max_entries
    return {"count": await journal.count(caller.account_id, match, keep)}


async def clear_requests(
    caller: Caller,
) -> tuple[None, int]:
    await journal.clear(_admin(caller).account_id)
    return None, 204


# --- snapshots ----------------------------------------------------------------------------


async def snapshot(caller: Caller, include_secrets: bool = False) -> dict[str, Any]:
    from tunnelgw.services import snapshots

    taken = await snapshots.take_now(_admin(caller).account_id, include_secrets=include_secrets)
    return {"version": 1, "snapshot": taken}
