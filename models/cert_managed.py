"""Automatic certificate management on a resource (reserved domains, agent ingresses): the
policy and the simulated provisioning job's columns and their API shapes, one definition for
both (tunnelgw.rules.certmanagement computes the job's course, tunnelgw.services.certstore
applies it)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import String, Text
from sqlmodel import Field, SQLModel

from tunnelgw.models.base import TIMESTAMP
from tunnelgw.rules import certmanagement


class CertManaged(SQLModel):
    """Columns of a resource whose certificate the service may manage.

    The table declares its own `certificate_id` (the certificate in use, or the latest one
    management issued) and `domain`; `cert_name()` is the DNS name certificates are issued
    for."""

    # Certificate management policy; both None when management is disabled.
    cert_authority: str | None = Field(default=None, sa_type=String(64), nullable=True)
    cert_private_key_type: str | None = Field(default=None, sa_type=String(8), nullable=True)
    # Certificate management status: the provisioning job (job_started_at None: no job).
    renews_at: datetime | None = Field(default=None, sa_type=TIMESTAMP, nullable=True)
    job_started_at: datetime | None = Field(default=None, sa_type=TIMESTAMP, nullable=True)
    job_msg: str | None = Field(default=None, sa_type=Text, nullable=True)
    job_error_code: str | None = Field(default=None, sa_type=String(32), nullable=True)
    job_retries_at: datetime | None = Field(default=None, sa_type=TIMESTAMP, nullable=True)

    def cert_name(self) -> str:  # pragma: no cover - every table overrides it
        raise NotImplementedError

    def policy_api(self) -> dict[str, str] | None:
        if self.cert_authority is None:
            return None
        key_type = self.cert_private_key_type or certmanagement.DEFAULT_KEY_TYPE
        return certmanagement.Policy(self.cert_authority, key_type).as_api()

    def status_api(self) -> dict[str, Any] | None:
        if self.cert_authority is None:
            return None
        job = None
        if self.job_started_at is not None:
            job = {
                "error_code": self.job_error_code,
                "msg": self.job_msg or "",
                "started_at": self.api_time("job_started_at"),  # type: ignore[attr-defined]
                "retries_at": self.api_time("job_retries_at"),  # type: ignore[attr-defined]
            }
        return {
            "renews_at": self.api_time("renews_at"),  # type: ignore[attr-defined]
            "provisioning_job": job,
        }
