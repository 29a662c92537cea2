"""Reserved domains (`rd_`): hostnames held for an account, with an uploaded certificate or
an automatic certificate management policy (never both)."""

from __future__ import annotations

from typing import Any, ClassVar

from sqlalchemy import JSON, Index, String, Text, bindparam, select
from sqlmodel import Field

from tunnelgw.core import urls
from tunnelgw.models.base import DescribedResource, id_field
from tunnelgw.models.cert_managed import CertManaged
from tunnelgw.storage.statements import Query
from tunnelgw.storage.unit import Unit


class ReservedDomain(DescribedResource, CertManaged, table=True):
    __tablename__ = "reserved_domain"
    __table_args__ = (
        Index("ix_reserved_domain_account_id_id", "account_id", "id"),
        # A domain is reserved once across all accounts.
        Index("ux_reserved_domain_domain", "domain", unique=True),
        # "Is this TLS certificate in use" on certificate delete.
        Index("ix_reserved_domain_certificate_id", "certificate_id"),
    )
    PREFIX: ClassVar[str] = "rd"
    EVENT_KIND: ClassVar[str | None] = "reserved_domain"
    PATH: ClassVar[str] = "/reserved_domains"
    FIXTURE_SECTION: ClassVar[str | None] = "reserved_domains"

    domain: str = Field(sa_type=String(253))  # lower case
    region: str = Field(default="us", sa_type=String(8))
    cname_target: str | None = Field(default=None, sa_type=Text, nullable=True)
    acme_challenge_cname_target: str | None = Field(default=None, sa_type=Text, nullable=True)
    http_endpoint_configuration_id: str | None = id_field(default=None, nullable=True)
    https_endpoint_configuration_id: str | None = id_field(default=None, nullable=True)
    certificate_id: str | None = id_field(default=None, nullable=True)
    # The region values of `resolves_to` ("global" or a region); [] is global resolution.
    resolves_to: list[str] = Field(
        default_factory=list, sa_type=JSON, sa_column_kwargs={"server_default": "[]"}
    )

    def cert_name(self) -> str:
        return self.domain

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
            # Global resolution reads back null, not []: the platform's Go clients see no
            # list (the platform's Terraform provider keeps null; [] makes every later
            # update an "inconsistent result after apply").
            "resolves_to": [{"value": value} for value in self.resolves_to] or None,
        }


async def using_certificate(unit: Unit, certificate_id: str) -> list[str]:
    """The id of a reserved domain (of any account) that names the TLS certificate as its own
    ([] when none; one is enough to refuse its delete)."""
    return list((await unit.exec(_USES_CERTIFICATE, {"certificate_id": certificate_id})).all())


_USES_CERTIFICATE = Query(
    select(ReservedDomain.id)  # type: ignore[call-overload]
    .where(ReservedDomain.certificate_id == bindparam("certificate_id"))
    .limit(1)
)
