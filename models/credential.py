"""Tunnel credentials (`cr_`): the authtokens agents start tunnels with, owned by a principal
(tunnelgw.models.base.Owned), with their ACL rules (tunnelgw.rules.acls). Only the SHA-256 of the
token is stored, as for API keys."""

from __future__ import annotations

from typing import Any, ClassVar

from sqlalchemy import JSON, Index
from sqlmodel import Field

from tunnelgw.models.base import DescribedResource, Owned, secret


class Credential(DescribedResource, Owned, table=True):
    __tablename__ = "credential"
    __table_args__ = (Index("ix_credential_account_id_id", "account_id", "id"),)
    PREFIX: ClassVar[str] = "cr"
    EVENT_KIND: ClassVar[str | None] = "credential"
    PATH: ClassVar[str] = "/credentials"
    FIXTURE_SECTION: ClassVar[str | None] = "credentials"
    CACHED_RENDERING: ClassVar[bool] = True  # to_api() without a token: the row and base URL

    token_hash: str = Field(
        max_length=64,
        unique=True,
        sa_column_kwargs=secret(
            "the credential has no working authtoken: agents cannot connect with it; "
            "create a new credential"
        ),
    )
    acl: list[str] = Field(default_factory=list, sa_type=JSON)

    def to_api(self, token: str | None = None) -> dict[str, Any]:
        """The API shape; `token` is passed only by the create operation."""
        return {
            **self.common_api(),
            "token": token,
            "acl": list(self.acl),
            "owner_id": self.owner_id,
        }
