"""SSH credentials (`sshcr_`): SSH public keys that start tunnels through an SSH gateway, owned by a
principal (tunnelgw.models.base.Owned), with the same ACL rules as tunnel credentials. The key is
stored as it was sent (checked like an SSH user certificate's key) and never changes."""

from __future__ import annotations

from typing import Any, ClassVar

from sqlalchemy import JSON, Index, Text
from sqlmodel import Field

from tunnelgw.models.base import DescribedResource, Owned


class SshCredential(DescribedResource, Owned, table=True):
    __tablename__ = "ssh_credential"
    __table_args__ = (Index("ix_ssh_credential_account_id_id", "account_id", "id"),)
    PREFIX: ClassVar[str] = "sshcr"
    EVENT_KIND: ClassVar[str | None] = "ssh_credential"
    PATH: ClassVar[str] = "/ssh_credentials"
    FIXTURE_SECTION: ClassVar[str | None] = "ssh_credentials"
    CACHED_RENDERING: ClassVar[bool] = True  # to_api(): the row and base URL only

    public_key: str = Field(sa_type=Text)
    acl: list[str] = Field(default_factory=list, sa_type=JSON)

    def to_api(self) -> dict[str, Any]:
        return {
            **self.common_api(),
            "public_key": self.public_key,
            "acl": list(self.acl),
            "owner_id": self.owner_id,
        }
