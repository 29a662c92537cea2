"""Access tokens (`pat_`): bearer credentials with scopes (tunnelgw.core.scopes), owned by the
principal that created them (tunnelgw.models.base.Owned). Only the SHA-256 of the token is stored,
as for API keys. A revoked token stays listed with its `revoked_at`; a deleted one is gone. Either
way, and once `expires_at` has passed on the account's clock, it no longer authenticates
(tunnelgw.services.auth reads it on every request)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar

from sqlalchemy import JSON, Index
from sqlmodel import Field

from tunnelgw.models.base import TIMESTAMP, DescribedResource, Owned, secret


class AccessToken(DescribedResource, Owned, table=True):
    __tablename__ = "access_token"
    __table_args__ = (Index("ix_access_token_account_id_id", "account_id", "id"),)
    PREFIX: ClassVar[str] = "pat"
    PATH: ClassVar[str] = "/access_tokens"
    FIXTURE_SECTION: ClassVar[str | None] = "access_tokens"
    CACHED_RENDERING: ClassVar[bool] = True  # to_api() without a token: the row and base URL

    token_hash: str = Field(
        max_length=64,
        unique=True,
        sa_column_kwargs=secret(
            "the access token has no working token: its requests get 401; create a new one"
        ),
    )
    scopes: list[str] = Field(default_factory=list, sa_type=JSON)
    expires_at: datetime | None = Field(default=None, sa_type=TIMESTAMP, nullable=True)
    revoked_at: datetime | None = Field(default=None, sa_type=TIMESTAMP, nullable=True)

    def to_api(self, token: str | None = None) -> dict[str, Any]:
        """The API shape; `token` is passed only by the create operation."""
        return {
            **self.common_api(),
            "token": token,
            "scopes": list(self.scopes),
            "owner_id": self.owner_id,
            "expires_at": self.api_time("expires_at"),
            "revoked_at": self.api_time("revoked_at"),
        }
