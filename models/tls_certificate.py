"""TLS certificates (`cert_`): uploaded through the API (or a fixture file), or issued by
reserved-domain certificate management; referenced by reserved domains. Every field the API
shows is derived from the leaf certificate once, when the row is made."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar

from sqlalchemy import JSON, Index, LargeBinary, String, Text
from sqlmodel import Field

from tunnelgw.models.base import TIMESTAMP, DescribedResource, id_field, secret

if TYPE_CHECKING:
    from tunnelgw.crypto.tls import CertificateFields


def _no_names() -> dict[str, list[str]]:
    return {"dns_names": [], "ips": []}


class TlsCertificate(DescribedResource, table=True):
    __tablename__ = "tls_certificate"
    __table_args__ = (Index("ix_tls_certificate_account_id_id", "account_id", "id"),)
    PREFIX: ClassVar[str] = "cert"
    EVENT_KIND: ClassVar[str | None] = "tls_certificate"
    PATH: ClassVar[str] = "/tls_certificates"
    FIXTURE_SECTION: ClassVar[str | None] = "tls_certificates"

    # The chain as stored (re-encoded PEM, leaf first); the other columns are the leaf's.
    certificate_pem: str = Field(sa_type=Text)
    # PKCS #8 DER wrapped under the KEK (tunnelgw.crypto.keys.wrap, the row id as associated
    # data); None for fixture certificates written without a key. Never in the API shape.
    wrapped_private_key: bytes | None = Field(
        default=None,
        sa_type=LargeBinary,
        nullable=True,
        sa_column_kwargs=secret(
            "the certificate has no private key: the server holds its public fields only"
        ),
    )
    # The reserved domain whose certificate management issued it; None when uploaded.
    issued_for_id: str | None = id_field(default=None, nullable=True)
    issued_at: datetime | None = Field(default=None, sa_type=TIMESTAMP, nullable=True)
    not_before: datetime = Field(sa_type=TIMESTAMP)
    not_after: datetime = Field(sa_type=TIMESTAMP)
    subject_common_name: str = Field(default="", sa_type=Text)
    # {"dns_names": [...], "ips": [...]}
    subject_alternative_names: dict[str, list[str]] = Field(default_factory=_no_names, sa_type=JSON)
    key_usages: list[str] = Field(default_factory=list, sa_type=JSON)
    extended_key_usages: list[str] = Field(default_factory=list, sa_type=JSON)
    private_key_type: str = Field(sa_type=String(16))  # rsa, ecdsa or ed25519
    issuer_common_name: str = Field(default="", sa_type=Text)
    serial_number: str = Field(default="", sa_type=Text)  # lowercase hex
    subject_organization: str = Field(default="", sa_type=Text)
    subject_organizational_unit: str = Field(default="", sa_type=Text)
    subject_locality: str = Field(default="", sa_type=Text)
    subject_province: str = Field(default="", sa_type=Text)
    subject_country: str = Field(default="", sa_type=Text)

    def to_api(self) -> dict[str, Any]:
        names = self.subject_alternative_names
        return {
            **self.common_api(),
            "certificate_pem": self.certificate_pem,
            "subject_common_name": self.subject_common_name,
            "subject_alternative_names": {
                "dns_names": list(names.get("dns_names", [])),
                "ips": list(names.get("ips", [])),
            },
            "issued_at": self.api_time("issued_at"),
            "not_before": self.api_time("not_before"),
            "not_after": self.api_time("not_after"),
            "key_usages": list(self.key_usages),
            "extended_key_usages": list(self.extended_key_usages),
            "private_key_type": self.private_key_type,
            "issuer_common_name": self.issuer_common_name,
            "serial_number": self.serial_number,
            "subject_organization": self.subject_organization,
            "subject_organizational_unit": self.subject_organizational_unit,
            "subject_locality": self.subject_locality,
            "subject_province": self.subject_province,
            "subject_country": self.subject_country,
        }


def certificate_columns(fields: CertificateFields) -> dict[str, Any]:
    """The derived columns of a row, from its leaf certificate's fields."""
    return {
        "subject_common_name": fields.subject_common_name,
        "subject_alternative_names": fields.subject_alternative_names.as_api(),
        "not_before": fields.not_before,
        "not_after": fields.not_after,
        "key_usages": [*fields.key_usages],
        "extended_key_usages": [*fields.extended_key_usages],
        "private_key_type": fields.private_key_type,
        "issuer_common_name": fields.issuer_common_name,
        "serial_number": fields.serial_number,
        "subject_organization": fields.subject_organization,
        "subject_organizational_unit": fields.subject_organizational_unit,
        "subject_locality": fields.subject_locality,
        "subject_province": fields.subject_province,
        "subject_country": fields.subject_country,
    }
