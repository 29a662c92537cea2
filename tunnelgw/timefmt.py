"""Timestamps: aware UTC datetimes inside, RFC 3339 with whole seconds and `Z` on the wire."""

from __future__ import annotations

from datetime import UTC, datetime


class Instant(datetime):
    """A timestamp read from the database, carrying its wire text (`wire`), made while the
    stored text was at hand: rendering a page of rows then costs no formatting. Arithmetic on
    an Instant yields Instants without `wire`; `rfc3339` formats those as any datetime."""

    __slots__ = ("wire",)
    wire: str

    @classmethod
    def from_stored(cls, text: str) -> Instant:
        """The Instant of SQLite's stored text `YYYY-MM-DD HH:MM:SS[.ffffff]` (UTC)."""
        value = cls.fromisoformat(text[:19] + "+00:00")
        value.wire = f"{text[:10]}T{text[11:19]}Z"
        return value


def utcnow() -> datetime:
    """The current time, aware UTC, truncated to whole seconds (what the wire shows)."""
    return datetime.now(UTC).replace(microsecond=0)


def rfc3339(value: datetime) -> str:
    """`2026-11-21T10:11:14Z`; naive values are taken as UTC (SQLite drops the zone).

    Built with isoformat, not strftime: glibc's `%Y` writes `999` for the year 999, and
    certificates can carry such dates.
    """
    wire: str | None = getattr(value, "wire", None)
    if wire is not None:
        return wire
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    elif value.utcoffset():
        value = value.astimezone(UTC)
    return value.isoformat(timespec="seconds")[:19] + "Z"


def rfc3339_or_none(value: datetime | None) -> str | None:
    return None if value is None else rfc3339(value)
