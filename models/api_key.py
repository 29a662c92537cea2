"""API keys: bearer credentials. Only the SHA-256 of the token is stored."""

from __future__ import annotations

from typing import Any, ClassVar

from sqlalchemy import Index
from sqlmodel import Field

from tunnelgw.models.base import DescribedResource, Owned, secret


class ApiKey(DescribedResource, Owned, table=True):
    __tablename__ = "api_key"
    __table_args__ = (Index("ix_api_key_account_id_id", "account_id", "id"),)
    PREFIX: ClassVar[str] = "ak"
    EVENT_KIND: ClassVar[str | None] = "api_key"
    PATH: ClassVar[str] = "/api_keys"
    FIXTURE_SECTION: ClassVar[str | None] = "api_keys"

    token_hash: str = Field(
        max_length=64,
        unique=True,
        sa_column_kwargs=secret(
            "the key has no working token: its requests get 401; create a new key"
        ),
    )

    def to_api(self, token: str | None = None) -> dict[str, Any]:
        """The API shape; `token` is passed only by the create operation."""
        return {
            **self.common_api(),
            "token": token,
            "owner_id": self.owner_id,
        }
