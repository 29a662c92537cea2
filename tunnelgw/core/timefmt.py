"""Timestamps: aware UTC datetimes inside, RFC 3339 with whole seconds and `Z` on the wire."""

from __future__ import annotations

import functools
import re
import time
from contextvars import ContextVar
from datetime import UTC, datetime, timedelta, timezone

# The simulated clock of the account the current request runs for (the admin API's
# `POST /_admin/clock`): set by authentication from the account row, so every worker of a
# database agrees. Everything time-driven reads the time through `now()`/`utcnow()`.
clock_offset: ContextVar[timedelta | None] = ContextVar("tunnelgw_clock_offset", default=None)


def now() -> datetime:
    """The current time (the account's simulated time inside its requests), aware UTC."""
    offset = clock_offset.get()
    current = datetime.now(UTC)
    return current if offset is None else current + offset


# The clock's current whole second and its datetime (`utcnow`; one tuple, replaced whole). The
# wire shows whole seconds, so the writes of one second (a create: the row's `created_at`, its
# event's time, both rendered) share one datetime, and `rfc3339` keeps the text of the last
# value it wrote (`lru_cache` of one): making each afresh cost ~1 us a call, most of it
# datetime's formatting (bench/README.md, issue 31, nineteenth round).
_second: tuple[int, datetime] = (-1, datetime.min.replace(tzinfo=UTC))


def utcnow() -> datetime:
    """`now()` truncated to whole seconds (what the wire shows)."""
    global _second
    offset = clock_offset.get()
    if offset is not None:  # an account's simulated clock
        return now().replace(microsecond=0)
    whole = int(time.time())  # the clock datetime.now reads
    second = _second
    if second[0] != whole:
        second = _second = (whole, datetime.fromtimestamp(whole, UTC))
    return second[1]


@functools.lru_cache(maxsize=1)
def rfc3339(value: datetime) -> str:
    """`2026-11-21T10:11:14Z`; naive values are taken as UTC (SQLite drops the zone).

    Built with isoformat, not strftime: glibc's `%Y` writes `999` for the year 999, and
    certificates can carry such dates. A value equal to the last one gets its text (an aware
    and a naive value are never equal; equal aware ones are one instant).
    """
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    elif value.utcoffset():
        value = value.astimezone(UTC)
    return value.isoformat(timespec="seconds")[:19] + "Z"


def rfc3339_or_none(value: datetime | None) -> str | None:
    return None if value is None else rfc3339(value)


# RFC 3339 `date-time` (its section 5.6): `T` between date and time, seconds, an optional
# fraction, then `Z` or an offset. Hours, minutes and seconds are range-checked by datetime.
_RFC3339 = re.compile(
    r"(\d{4})-(\d\d)-(\d\d)[Tt](\d\d):(\d\d):(\d\d)(?:\.(\d+))?(?:[Zz]|([+-])(\d\d):(\d\d))",
    re.ASCII,
)


def parse_rfc3339(text: str) -> datetime:
    """`text`, an RFC 3339 date-time, as an aware datetime in its own offset (microseconds at
    most). Raises ValueError for anything else: another ISO 8601 form, an impossible date or
    time (`02-30`, `24:00`, a leap second `:60`), an offset beyond -23:59..+23:59."""
    match = _RFC3339.fullmatch(text)
    if match is None:
        raise ValueError(f"{text[:64]!r} is not an RFC 3339 date-time")
    year, month, day, hour, minute, second = (int(part) for part in match.groups()[:6])
    fraction, sign, offset_hours, offset_minutes = match.groups()[6:]
    zone = UTC
    if sign is not None:
        hours, minutes = int(offset_hours), int(offset_minutes)
        if hours > 23 or minutes > 59:
            raise ValueError(f"{text[:64]!r}: an offset is -23:59 to +23:59")
        span = timedelta(hours=hours, minutes=minutes)
        zone = timezone(-span if sign == "-" else span)
    micro = int(fraction[:6].ljust(6, "0")) if fraction else 0
    return datetime(year, month, day, hour, minute, second, micro, tzinfo=zone)
