"""Timestamps: aware UTC datetimes inside, RFC 3339 with whole seconds and `Z` on the wire."""

from __future__ import annotations

from datetime import UTC, datetime


def utcnow() -> datetime:
    """The current time, aware UTC, truncated to whole seconds (what the wire shows)."""
    return datetime.now(UTC).replace(microsecond=0)


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
