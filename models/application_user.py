"""Application users (`appusr_`), read-only: users who signed in to an endpoint through an
identity provider; created by fixtures."""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar

from sqlalchemy import Index, Text
from sqlmodel import Field

from tunnelgw.core import timefmt
from tunnelgw.models.base import TIMESTAMP, AccountScoped


class ApplicationUser(AccountScoped, table=True):
    __tablename__ = "application_user"
    __table_args__ = (Index("ix_application_user_account_id_id", "account_id", "id"),)
    PREFIX: ClassVar[str] = "appusr"
    EVENT_KIND: ClassVar[str | None] = "application_user"
    PATH: ClassVar[str] = "/app/users"
    QUOTA: ClassVar[bool] = False
    CACHED_RENDERING: ClassVar[bool] = True  # to_api(): the row and base URL only

    identity_provider_name: str = Field(default="", sa_type=Text)
    identity_provider_url: str = Field(default="", sa_type=Text)
    provider_user_id: str = Field(default="", sa_type=Text)
    username: str = Field(default="", sa_type=Text)
    email: str = Field(default="", sa_type=Text)
    name: str = Field(default="", sa_type=Text)
    last_active: datetime = Field(default_factory=timefmt.utcnow, sa_type=TIMESTAMP)
    last_login: datetime = Field(default_factory=timefmt.utcnow, sa_type=TIMESTAMP)

    def to_api(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "uri": self.uri,
            "identity_provider": {
                "name": self.identity_provider_name,
                "url": self.identity_provider_url,
            },
            "provider_user_id": self.provider_user_id,
            "username": self.username,
            "email": self.email,
            "name": self.name,
            "created_at": self.api_time("created_at"),
            "last_active": self.api_time("last_active"),
            "last_login": self.api_time("last_login"),
        }
