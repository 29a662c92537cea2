"""SSH certificate authorities: a generated key pair; the private key is stored wrapped."""

from __future__ import annotations

from typing import Any, ClassVar

from sqlalchemy import Index, LargeBinary, String, Text
from sqlmodel import Field

from tunnelgw.models.base import DescribedResource, secret


class SshCertificateAuthority(DescribedResource, table=True):
    __tablename__ = "ssh_certificate_authority"
    __table_args__ = (Index("ix_ssh_certificate_authority_account_id_id", "account_id", "id"),)
    PREFIX: ClassVar[str] = "sshca"
    EVENT_KIND: ClassVar[str | None] = "ssh_certificate_authority"
    PATH: ClassVar[str] = "/ssh_certificate_authorities"
    FIXTURE_SECTION: ClassVar[str | None] = "ssh_certificate_authorities"

    public_key: str = Field(sa_type=Text)
    key_type: str = Field(sa_type=String(16))
    # PKCS #8 DER encrypted with AES-GCM under the KEK, the row id as associated data
    # (tunnelgw.crypto.keys.wrap); never in the API shape.
    wrapped_private_key: bytes = Field(
        sa_type=LargeBinary,
        sa_column_kwargs=secret(
            "the CA has no private key: signing SSH user or host certificates with it is "
            "409 ERR_SECRET_LEFT_OUT"
        ),
    )

    def to_api(self) -> dict[str, Any]:
        return {
            **self.common_api(),
            "public_key": self.public_key,
            "key_type": self.key_type,
        }
