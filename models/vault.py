"""Vaults (`vault_`): named containers of secrets (tunnelgw.models.vault_secret), the name unique in
the account; `created_by` / `last_updated_by` are the ids of the principals that made the
changes."""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar

from sqlalchemy import Index, String, UniqueConstraint
from sqlmodel import Field

from tunnelgw.core import timefmt
from tunnelgw.models.base import ID_TYPE, TIMESTAMP, DescribedResource


class Vault(DescribedResource, table=True):
    __tablename__ = "vault"
    __table_args__ = (
        Index("ix_vault_account_id_id", "account_id", "id"),
        # Backs the operations' name check (a concurrent duplicate is 409 ERR_CONFLICT).
        UniqueConstraint("account_id", "name", name="uq_vault_account_id_name"),
    )
    PREFIX: ClassVar[str] = "vault"
    EVENT_KIND: ClassVar[str | None] = "vault"
    PATH: ClassVar[str] = "/vaults"
    FIXTURE_SECTION: ClassVar[str | None] = "vaults"
    CACHED_RENDERING: ClassVar[bool] = True  # to_api(): the row and base URL only

    name: str = Field(sa_type=String(64))
    updated_at: datetime = Field(default_factory=timefmt.utcnow, sa_type=TIMESTAMP)
    # Principal ids (`usr_` / `bot_`), no foreign key: the record outlives a deleted bot user.
    created_by: str = Field(sa_type=ID_TYPE)
    last_updated_by: str = Field(sa_type=ID_TYPE)

    def to_api(self) -> dict[str, Any]:
        return {
            **self.common_api(),
            "updated_at": self.api_time("updated_at"),
            "name": self.name,
            "created_by": self.created_by,
            "last_updated_by": self.last_updated_by,
        }
