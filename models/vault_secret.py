"""Secrets (`secret_`) of vaults: a name unique in its vault and a write-only value, stored only
encrypted under the key-encryption key (tunnelgw.crypto.keys.wrap, the row id as associated
data) and never part of the API shape."""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar

from sqlalchemy import Index, LargeBinary, String, UniqueConstraint
from sqlmodel import Field

from tunnelgw.core import timefmt, urls
from tunnelgw.models.base import ID_TYPE, TIMESTAMP, DescribedResource, id_field, secret
from tunnelgw.models.principal import principal_ref


class VaultSecret(DescribedResource, table=True):
    __tablename__ = "vault_secret"
    __table_args__ = (
        Index("ix_vault_secret_account_id_id", "account_id", "id"),
        # The vault's secrets in id order (GET /vaults/{id}/secrets) and the name check; a
        # concurrent duplicate name is 409 ERR_CONFLICT.
        UniqueConstraint("vault_id", "name", name="uq_vault_secret_vault_id_name"),
        Index("ix_vault_secret_vault_id_id", "vault_id", "id"),
    )
    PREFIX: ClassVar[str] = "secret"
    EVENT_KIND: ClassVar[str | None] = "secret"
    PATH: ClassVar[str] = "/vault_secrets"
    FIXTURE_SECTION: ClassVar[str | None] = "vault_secrets"
    CACHED_RENDERING: ClassVar[bool] = True  # to_api(): the row and base URL only

    # RESTRICT: a vault that holds secrets is not deleted (the operation says 409 first).
    vault_id: str = id_field(foreign_key="vault.id", ondelete="RESTRICT")
    # The vault's name, kept in step when the vault is renamed (the same write unit), so the
    # API shape is the row's own.
    vault_name: str = Field(sa_type=String(64))
    name: str = Field(sa_type=String(64))
    # The value encrypted under the KEK (AES-256-GCM, the row id as associated data).
    wrapped_value: bytes = Field(
        sa_type=LargeBinary,
        sa_column_kwargs=secret("the secret has no value: update it with its value"),
    )
    updated_at: datetime = Field(default_factory=timefmt.utcnow, sa_type=TIMESTAMP)
    created_by: str = Field(sa_type=ID_TYPE)
    last_updated_by: str = Field(sa_type=ID_TYPE)

    def to_api(self) -> dict[str, Any]:
        return {
            **self.common_api(),
            "updated_at": self.api_time("updated_at"),
            "name": self.name,
            "created_by": principal_ref(self.created_by),
            "last_updated_by": principal_ref(self.last_updated_by),
            "vault": urls.ref("/vaults", self.vault_id),
            "vault_name": self.vault_name,
        }
