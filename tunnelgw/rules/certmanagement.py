"""Simulated certificate management of reserved domains: the policy of a request and the
provisioning job's state at a given time, as pure functions of the row's fields, `now` and
the settings (no database, no crypto; tunnelgw.services.certstore applies them to stored rows).

A job without an error completes `delay` after it starts. For a domain under `.invalid` it
fails (DNS_ERROR) and restarts at `retries_at` = failure + `retry`, forever; otherwise it
issues a certificate valid from the completion for `validity`, and the next (renewal) job
starts at `renews_at` = end of validity - `renew_before`. Both cycles are periodic, so the
state at any `now` is computed in closed form, however long ago the row was last read.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from tunnelgw.core.errors import ApiError, Code
from tunnelgw.core.settings import Settings

DNS_ERROR = "DNS_ERROR"
FAILING_TLD = "invalid"  # RFC 6761: never resolves; documented failure injection
KEY_TYPES = ("rsa", "ecdsa")
DEFAULT_KEY_TYPE = "rsa"


@dataclass(frozen=True, slots=True)
class Policy:
    authority: str
    private_key_type: str

    def as_api(self) -> dict[str, str]:
        return {"authority": self.authority, "private_key_type": self.private_key_type}


@dataclass(frozen=True, slots=True)
class Status:
    """The certificate management columns of a reserved domain (no job: job_started_at None)."""

    renews_at: datetime | None = None
    job_started_at: datetime | None = None
    job_msg: str | None = None
    job_error_code: str | None = None
    job_retries_at: datetime | None = None

    @classmethod
    def of(cls, row: Any) -> Status:
        return cls(
            renews_at=_aware(row.renews_at),
            job_started_at=_aware(row.job_started_at),
            job_msg=row.job_msg,
            job_error_code=row.job_error_code,
            job_retries_at=_aware(row.job_retries_at),
        )

    def write_to(self, row: Any) -> None:
        for f in fields(self):
            setattr(row, f.name, getattr(self, f.name))


@dataclass(frozen=True, slots=True)
class Settled:
    """The status at `now`, and when the certificate to issue starts (None: no new one)."""

    status: Status
    issue_at: datetime | None


@dataclass(frozen=True, slots=True)
class Timing:
    delay: timedelta
    retry: timedelta
    validity: timedelta
    renew_before: timedelta

    @classmethod
    def of(cls, settings: Settings) -> Timing:
        validity = timedelta(days=settings.certificate_validity_days)
        # A renewal before the certificate starts would renew forever: keep a day of use.
        renew_before = min(
            timedelta(days=settings.certificate_renew_before_days), validity - timedelta(days=1)
        )
        return cls(
            # Whole seconds, like every time on the wire.
            delay=timedelta(seconds=math.ceil(settings.certificate_issue_delay_seconds)),
            retry=timedelta(seconds=settings.certificate_retry_seconds),
            validity=validity,
            renew_before=renew_before,
        )

    @property
    def in_use(self) -> timedelta:
        """From a certificate's start to its renewal."""
        return self.validity - self.renew_before


def _aware(value: datetime | None) -> datetime | None:
    """SQLite returns naive datetimes; every time here is UTC."""
    if value is None or value.tzinfo is not None:
        return value
    return value.replace(tzinfo=UTC)


# Requests.


def check_exclusive(body: dict[str, Any]) -> None:
    """ApiError(400) when a body sets both certificate_id and certificate_management_policy
    (a `certificate_id` of `""` is unset)."""
    if body.get("certificate_id") and body.get("certificate_management_policy") is not None:
        raise ApiError(
            Code.CONFLICTING_FIELDS,
            "certificate_id and certificate_management_policy exclude each other: attach an "
            "uploaded certificate or automatic certificate management, not both.",
            field="certificate_management_policy",
        )


def policy(value: dict[str, Any] | None, settings: Settings) -> Policy | None:
    """The policy of a request's `certificate_management_policy` (None: management off)."""
    if value is None:
        return None
    return Policy(
        authority=value.get("authority") or settings.certificate_authority,
        private_key_type=value.get("private_key_type") or DEFAULT_KEY_TYPE,
    )


def job_message(authority: str) -> str:
    return f"provisioning a certificate from {authority}"


def started(authority: str, now: datetime) -> Status:
    """A new provisioning job (a policy was just attached)."""
    return Status(job_started_at=now, job_msg=job_message(authority))


# The job's course.


def fails(domain: str) -> bool:
    return domain.rsplit(".", 1)[-1] == FAILING_TLD


def failure_message(domain: str, authority: str) -> str:
    return (
        f"{authority} could not validate {domain}: names under .{FAILING_TLD} never resolve "
        "in DNS (RFC 6761). Reserve a domain that resolves; retrying at retries_at."
    )


def window(issue_at: datetime, settings: Settings) -> tuple[datetime, datetime]:
    """(not_before, not_after) of a certificate issued at `issue_at`."""
    return issue_at, issue_at + Timing.of(settings).validity


def next_event(status: Status, settings: Settings) -> datetime | None:
    """When the status changes next on its own; None when it never does."""
    if status.job_started_at is not None:
        if status.job_error_code is None:
            return status.job_started_at + Timing.of(settings).delay
        return status.job_retries_at
    return status.renews_at


def is_due(status: Status, now: datetime, settings: Settings) -> bool:
    """Whether the status at `now` differs from the stored one."""
    event = next_event(status, settings)
    return event is not None and event <= now


def _job_start(status: Status) -> datetime | None:
    """When the job running at the next event started (or restarts, or renews)."""
    if status.job_started_at is not None:
        return status.job_started_at if status.job_error_code is None else status.job_retries_at
    return status.renews_at


def settle(
    status: Status, domain: str, authority: str, now: datetime, settings: Settings
) -> Settled | None:
    """The status at `now` of a domain with a policy of `authority`; None if unchanged."""
    start = _job_start(status)
    if start is None or not is_due(status, now, settings):
        return None
    timing = Timing.of(settings)
    if fails(domain):
        return Settled(_failing(status, start, domain, authority, now, timing), None)
    return _issuing(status, start, authority, now, timing)


def _failing(
    status: Status, start: datetime, domain: str, authority: str, now: datetime, t: Timing
) -> Status:
    """Fail at start + delay, restart at the failure + retry, and so on."""
    period = t.delay + t.retry
    began = start + period * ((now - start) // period)
    if began + t.delay > now:  # restarted, not failed yet
        return replace(status, **_job(began, job_message(authority)))
    failed = began + t.delay
    job = _job(began, failure_message(domain, authority))
    job.update(job_error_code=DNS_ERROR, job_retries_at=failed + t.retry)
    return replace(status, **job)


def _issuing(status: Status, start: datetime, authority: str, now: datetime, t: Timing) -> Settled:
    """Issue at start + delay, renew at the issue + in_use, and so on; the latest issue."""
    period = t.delay + t.in_use
    cycles = (now - start) // period
    began = start + period * cycles
    if began + t.delay <= now:
        issued = began + t.delay
        return Settled(Status(renews_at=issued + t.in_use), issued)
    # A renewal job is running; the certificate before it was issued one period earlier.
    previous = began - period + t.delay
    return Settled(
        Status(renews_at=began, **_job(began, job_message(authority))),
        previous if cycles > 0 else None,
    )


def _job(started_at: datetime, msg: str) -> dict[str, Any]:
    return {
        "job_started_at": started_at,
        "job_msg": msg,
        "job_error_code": None,
        "job_retries_at": None,
    }
