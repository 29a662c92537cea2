"""SSH user certificates: a user key signed by an SSH certificate authority."""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar

from sqlalchemy import JSON, Index, String, Text, bindparam, select
from sqlmodel import Field

from tunnelgw.models.base import TIMESTAMP, DescribedResource, id_field
from tunnelgw.storage.statements import Query
from tunnelgw.storage.unit import Unit


class SshUserCertificate(DescribedResource, table=True):
    __tablename__ = "ssh_user_certificate"
    __table_args__ = (
        Index("ix_ssh_user_certificate_account_id_id", "account_id", "id"),
        # The "does this CA still have unexpired certificates" check on CA delete.
        Index(
            "ix_ssh_user_certificate_ca_valid_until",
            "ssh_certificate_authority_id",
            "valid_until",
        ),
    )
    PREFIX: ClassVar[str] = "sucrt"
    EVENT_KIND: ClassVar[str | None] = "ssh_user_certificate"
    PATH: ClassVar[str] = "/ssh_user_certificates"
    FIXTURE_SECTION: ClassVar[str | None] = "ssh_user_certificates"
    CACHED_RENDERING: ClassVar[bool] = True  # to_api(): the row and base URL only

    # No foreign key: expired certificates outlive their CA and keep naming it.
    ssh_certificate_authority_id: str = id_field()
    public_key: str = Field(sa_type=Text)
    key_type: str = Field(sa_type=String(16))
    principals: list[str] = Field(default_factory=list, sa_type=JSON)
    critical_options: dict[str, str] = Field(default_factory=dict, sa_type=JSON)
    extensions: dict[str, str] = Field(default_factory=dict, sa_type=JSON)
    valid_after: datetime = Field(sa_type=TIMESTAMP)
    valid_until: datetime = Field(sa_type=TIMESTAMP)
    certificate: str = Field(sa_type=Text)

    def to_api(self) -> dict[str, Any]:
        return {
            **self.common_api(),
            "public_key": self.public_key,
            "key_type": self.key_type,
            "ssh_certificate_authority_id": self.ssh_certificate_authority_id,
            "principals": list(self.principals),
            "critical_options": dict(self.critical_options),
            "extensions": dict(self.extensions),
            "valid_after": self.api_time("valid_after"),
            "valid_until": self.api_time("valid_until"),
            "certificate": self.certificate,
        }


async def unexpired(unit: Unit, ca_id: str, now: datetime) -> list[str]:
    """The id of a certificate the CA `ca_id` signed whose `valid_until` is after `now` (at
    most one; [] when none)."""
    return list((await unit.exec(_UNEXPIRED, {"ca_id": ca_id, "now": now})).all())


_UNEXPIRED = Query(
    select(SshUserCertificate.id)  # type: ignore[call-overload]
    .where(SshUserCertificate.ssh_certificate_authority_id == bindparam("ca_id"))
    .where(SshUserCertificate.valid_until > bindparam("now"))
    .limit(1)
)
