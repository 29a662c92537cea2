"""Certificate authorities: uploaded X.509 CA certificates and the fields derived from them."""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar

from sqlalchemy import JSON, Index, Text
from sqlmodel import Field

from tunnelgw.models.base import TIMESTAMP, DescribedResource


class CertificateAuthority(DescribedResource, table=True):
    __tablename__ = "certificate_authority"
    __table_args__ = (Index("ix_certificate_authority_account_id_id", "account_id", "id"),)
    PREFIX: ClassVar[str] = "ca"
    EVENT_KIND: ClassVar[str | None] = "certificate_authority"
    PATH: ClassVar[str] = "/certificate_authorities"
    FIXTURE_SECTION: ClassVar[str | None] = "certificate_authorities"
    CACHED_RENDERING: ClassVar[bool] = True  # to_api(): the row and base URL only

    # The normalised PEM; the other columns are derived from it once, at upload.
    ca_pem: str = Field(sa_type=Text)
    subject_common_name: str = Field(default="", sa_type=Text)
    not_before: datetime = Field(sa_type=TIMESTAMP)
    not_after: datetime = Field(sa_type=TIMESTAMP)
    key_usages: list[str] = Field(default_factory=list, sa_type=JSON)
    extended_key_usages: list[str] = Field(default_factory=list, sa_type=JSON)

    def to_api(self) -> dict[str, Any]:
        return {
            **self.common_api(),
            "ca_pem": self.ca_pem,
            "subject_common_name": self.subject_common_name,
            "not_before": self.api_time("not_before"),
            "not_after": self.api_time("not_after"),
            "key_usages": list(self.key_usages),
            "extended_key_usages": list(self.extended_key_usages),
        }
