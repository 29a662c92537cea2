"""Application sessions (`appses_`), read-only: a browser session of an application user on
an endpoint; created by fixtures."""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar

from sqlalchemy import JSON, Index, Text
from sqlmodel import Field

from models.base import TIMESTAMP, AccountScoped, id_field
from models.edge import edge_path
from tunnelgw import timefmt, urls


class ApplicationSession(AccountScoped, table=True):
    __tablename__ = "application_session"
    __table_args__ = (
        Index("ix_application_session_account_id_id", "account_id", "id"),
        Index("ix_application_session_application_user_id", "application_user_id"),
    )
    PREFIX: ClassVar[str] = "appses"
    PATH: ClassVar[str] = "/app/sessions"

    public_url: str = Field(default="", sa_type=Text)
    # BrowserSession as the API shows it: user_agent, ip_address, location.
    browser_session: dict[str, Any] = Field(default_factory=dict, sa_type=JSON)
    application_user_id: str = id_field()
    endpoint_id: str = id_field()
    edge_id: str | None = id_field(default=None, nullable=True)
    route_id: str | None = id_field(default=None, nullable=True)
    last_active: datetime = Field(default_factory=timefmt.utcnow, sa_type=TIMESTAMP)
    expires_at: datetime = Field(sa_type=TIMESTAMP)

    def to_api(self) -> dict[str, Any]:
        route = None
        if self.route_id is not None and self.edge_id is not None:
            path = f"/edges/https/{self.edge_id}/routes"
            route = urls.ref(path, self.route_id)
        return {
            "id": self.id,
            "uri": self.uri,
            "public_url": self.public_url,
            "browser_session": self.browser_session,
            "application_user": urls.ref("/app/users", self.application_user_id),
            "created_at": timefmt.rfc3339(self.created_at),
            "last_active": timefmt.rfc3339(self.last_active),
            "expires_at": timefmt.rfc3339(self.expires_at),
            "endpoint": urls.ref("/endpoints", self.endpoint_id),
            "edge": urls.ref(edge_path(self.edge_id), self.edge_id) if self.edge_id else None,
            "route": route,
        }
