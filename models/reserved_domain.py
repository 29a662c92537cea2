"""Reserved domains (`rd_`): hostnames held for an account, with an uploaded certificate or
an automatic certificate management policy (never both)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar

from sqlalchemy import Index, String, Text, bindparam, select
from sqlmodel import Field

from models.base import TIMESTAMP, DescribedResource, id_field
from tunnelgw import certmanagement, urls
from tunnelgw.db import Query, Unit


class ReservedDomain(DescribedResource, table=True):
    __tablename__ = "reserved_domain"
    __table_args__ = (
        Index("ix_reserved_domain_account_id_id", "account_id", "id"),
        # A domain is reserved once across all accounts.
        Index("ux_reserved_domain_domain", "domain", unique=True),
        # "Is this TLS certificate in use" on certificate delete.
        Index("ix_reserved_domain_certificate_id", "certificate_id"),
    )
    PREFIX: ClassVar[str] = "rd"
    PATH: ClassVar[str] = "/reserved_domains"

    domain: str = Field(sa_type=String(253))  # lower case
    region: str = Field(default="us", sa_type=String(8))
    cname_target: str | None = Field(default=None, sa_type=Text, nullable=True)
    acme_challenge_cname_target: str | None = Field(default=None, sa_type=Text, nullable=True)
    http_endpoint_configuration_id: str | None = id_field(default=None, nullable=True)
    https_endpoint_configuration_id: str | None = id_field(default=None, nullable=True)
    certificate_id: str | None = id_field(default=None, nullable=True)
    # Certificate management policy; both None when management is disabled.
    cert_authority: str | None = Field(default=None, sa_type=String(64), nullable=True)
    cert_private_key_type: str | None = Field(default=None, sa_type=String(8), nullable=True)
    # Certificate management status: the provisioning job (job_started_at None: no job).
    renews_at: datetime | None = Field(default=None, sa_type=TIMESTAMP, nullable=True)
    job_started_at: datetime | None = Field(default=None, sa_type=TIMESTAMP, nullable=True)
    job_msg: str | None = Field(default=None, sa_type=Text, nullable=True)
    job_error_code: str | None = Field(default=None, sa_type=String(32), nullable=True)
    job_retries_at: datetime | None = Field(default=None, sa_type=TIMESTAMP, nullable=True)

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
                "started_at": self.api_time("job_started_at"),
                "retries_at": self.api_time("job_retries_at"),
            }
        return {"renews_at": self.api_time("renews_at"), "provisioning_job": job}

    def to_api(self) -> dict[str, Any]:
        return {
            **self.common_api(),
            "domain": self.domain,
            "region": self.region,
            "cname_target": self.cname_target,
            "http_endpoint_configuration": urls.ref(
                "/endpoint_configurations", self.http_endpoint_configuration_id
            ),
            "https_endpoint_configuration": urls.ref(
                "/endpoint_configurations", self.https_endpoint_configuration_id
            ),
            "certificate": urls.ref("/tls_certificates", self.certificate_id),
            "certificate_management_policy": self.policy_api(),
            "certificate_management_status": self.status_api(),
            "acme_challenge_cname_target": self.acme_challenge_cname_target,
        }


async def uses_certificate(unit: Unit, certificate_id: str) -> bool:
    """Whether a reserved domain (of any account) names the TLS certificate as its own."""
    found = await unit.exec(_USES_CERTIFICATE, {"certificate_id": certificate_id})
    return found.first() is not None


_USES_CERTIFICATE = Query(
    select(ReservedDomain.id)  # type: ignore[call-overload]
    .where(ReservedDomain.certificate_id == bindparam("certificate_id"))
    .limit(1)
)
