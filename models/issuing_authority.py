"""The server's own issuing CA, which signs the certificates of reserved-domain certificate
management (one row per name; created on first use)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import LargeBinary, String, Text
from sqlmodel import Field

from tunnelgw.core import timefmt
from tunnelgw.models.base import TIMESTAMP, Row, secret


class IssuingAuthority(Row, table=True):
    __tablename__ = "issuing_authority"

    name: str = Field(primary_key=True, sa_type=String(64))
    certificate_pem: str = Field(sa_type=Text)
    # PKCS #8 DER wrapped under the KEK with the name as associated data; never returned.
    wrapped_private_key: bytes = Field(
        sa_type=LargeBinary, sa_column_kwargs=secret("server-wide; never in a snapshot")
    )
    created_at: datetime = Field(default_factory=timefmt.utcnow, sa_type=TIMESTAMP)
