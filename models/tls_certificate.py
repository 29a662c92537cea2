"""TLS certificates (`cert_`): uploaded by fixtures, or issued by reserved-domain
certificate management; referenced by reserved domains."""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar

from sqlalchemy import Index, LargeBinary, Text
from sqlmodel import Field

from models.base import TIMESTAMP, DescribedResource, id_field


class TlsCertificate(DescribedResource, table=True):
    __tablename__ = "tls_certificate"
    __table_args__ = (Index("ix_tls_certificate_account_id_id", "account_id", "id"),)
    PREFIX: ClassVar[str] = "cert"
    PATH: ClassVar[str] = "/tls_certificates"

    certificate_pem: str = Field(default="", sa_type=Text)
    # PKCS #8 DER wrapped under the KEK (tunnelgw.crypto.keys.wrap, the row id as associated
    # data); None for fixture certificates uploaded without a key. Never in the API shape.
    wrapped_private_key: bytes | None = Field(default=None, sa_type=LargeBinary, nullable=True)
    not_after: datetime | None = Field(default=None, sa_type=TIMESTAMP, nullable=True)
    # The reserved domain whose certificate management issued it; None when uploaded.
    issued_for_id: str | None = id_field(default=None, nullable=True)

    def to_api(self) -> dict[str, Any]:
        return {**self.common_api(), "certificate_pem": self.certificate_pem}
