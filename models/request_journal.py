"""The request journal of the admin API (`/_admin/requests`): each API request an account
made while the admin API is on, newest kept, bounded per account (tunnelgw.services.journal)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import JSON, Index, String, Text
from sqlmodel import Field

from tunnelgw.models.base import SEQ_TYPE, TIMESTAMP, Row, id_field


class JournalEntry(Row, table=True):
    __tablename__ = "request_journal"
    __table_args__ = (Index("ix_request_journal_account_id_seq", "account_id", "seq"),)

    # Arrival order across the workers of a database.
    seq: int | None = Field(default=None, primary_key=True, sa_type=SEQ_TYPE)
    account_id: str = id_field(foreign_key="account.id", ondelete="CASCADE")
    at: datetime = Field(sa_type=TIMESTAMP)  # the account's clock when the request arrived
    request_id: str = Field(sa_type=String(64))  # the `Operation-Id` the response carried
    method: str = Field(sa_type=String(8))
    path: str = Field(sa_type=Text)
    query: str = Field(default="", sa_type=Text)
    operation: str = Field(sa_type=String(128))
    status: int
    error_code: str | None = Field(default=None, sa_type=String(64), nullable=True)
    principal_id: str = id_field()
    # The credential: an API key's id, or (api_key_id None) an access token's.
    api_key_id: str | None = id_field(default=None, nullable=True)
    access_token_id: str | None = id_field(default=None, nullable=True)
    # The scope the operation needs of an access token (tunnelgw.core.scopes), whichever
    # credential was used; None for an operation that needs none.
    scope: str | None = Field(default=None, sa_type=String(64), nullable=True)
    duration_ms: float
    body_bytes: int = 0
    # The request body as JSON with its secret fields redacted; None: no body, not JSON, or
    # over the size the journal keeps.
    body: Any = Field(default=None, sa_type=JSON, nullable=True)

    def to_api(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "at": _milliseconds(self.at),
            "request_id": self.request_id,
            "method": self.method,
            "path": self.path,
            "query": self.query,
            "operation": self.operation,
            "status": self.status,
            "error_code": self.error_code,
            "principal_id": self.principal_id,
            "api_key_id": self.api_key_id,
            "access_token_id": self.access_token_id,
            "scope": self.scope,
            "duration_ms": self.duration_ms,
            "body_bytes": self.body_bytes,
            "body": self.body,
        }


def _milliseconds(value: datetime) -> str:
    """RFC 3339 in UTC with milliseconds: requests a few apart in one second stay apart."""
    value = value.astimezone(UTC) if value.tzinfo else value
    return f"{value:%Y-%m-%dT%H:%M:%S}.{value.microsecond // 1000:03d}Z"
