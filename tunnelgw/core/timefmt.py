"""Timestamps: aware UTC datetimes inside, RFC 3339 with whole seconds and `Z` on the wire."""

from __future__ import annotations

from contextvars import ContextVar
from datetime import UTC, datetime, timedelta

# The simulated clock of the account the current request runs for (the admin API's
# `POST /_admin/clock`): set by authentication from the account row, so every worker of a
# database agrees. Everything time-driven reads the time through `now()`/`utcnow()`.
clock_offset: ContextVar[timedelta | None] = ContextVar("tunnelgw_clock_offset", default=None)


def now() -> datetime:
    """The current time (the account's simulated time inside its requests), aware UTC."""
    offset = clock_offset.get()
    current = datetime.now(UTC)
    return current if offset is None else current + offset


def utcnow() -> datetime:
    """`now()` truncated to whole seconds (what the wire shows)."""
    return now().replace(microsecond=0)


def rfc3339(value: datetime) -> str:
    """`2026-11-21T10:11:14Z`; naive values are taken as UTC (SQLite drops the zone).

    Built with isoformat, not strftime: glibc's `%Y` writes `999` for the year 999, and
    certificates can carry such dates.
    """
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    elif value.utcoffset():
        value = value.astimezone(UTC)
    return value.isoformat(timespec="seconds")[:19] + "Z"


def rfc3339_or_none(value: datetime | None) -> str | None:
    return None if value is None else rfc3339(value)
