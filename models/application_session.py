"""Application sessions (`appses_`), read-only: a browser session of an application user on
an endpoint; created by fixtures."""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any, ClassVar

from sqlalchemy import JSON, Index, Text, bindparam, delete
from sqlmodel import Field

from tunnelgw.core import timefmt, urls
from tunnelgw.models.base import TIMESTAMP, AccountScoped, id_field
from tunnelgw.models.edge import edge_path
from tunnelgw.storage.statements import Query
from tunnelgw.storage.unit import Unit

_USER_AGENT_FIELDS = (
    "raw",
    "browser_name",
    "browser_version",
    "device_type",
    "os_name",
    "os_version",
)
_INT64_MAX = 2**63 - 1


def _obj(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _float(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0.0
    try:
        number = float(value)
    except OverflowError:
        return 0.0
    return number if math.isfinite(number) else 0.0


def _radius(value: Any) -> int:
    is_int = isinstance(value, int) and not isinstance(value, bool)
    return value if is_int and 0 <= value <= _INT64_MAX else 0


def browser_session_api(stored: Any) -> dict[str, Any]:
    """The BrowserSession shape with every field, whatever the stored JSON lacks: `""` for a
    missing or mistyped string, 0 for a number."""
    session = _obj(stored)
    agent = _obj(session.get("user_agent"))
    location = _obj(session.get("location"))
    return {
        "user_agent": {name: _str(agent.get(name)) for name in _USER_AGENT_FIELDS},
        "ip_address": _str(session.get("ip_address")),
        "location": {
            "country_code": _str(location.get("country_code")),
            "latitude": _float(location.get("latitude")),
            "longitude": _float(location.get("longitude")),
            "lat_long_radius_km": _radius(location.get("lat_long_radius_km")),
        },
    }


class ApplicationSession(AccountScoped, table=True):
    __tablename__ = "application_session"
    __table_args__ = (
        Index("ix_application_session_account_id_id", "account_id", "id"),
        Index("ix_application_session_application_user_id", "application_user_id"),
    )
    PREFIX: ClassVar[str] = "appses"
    EVENT_KIND: ClassVar[str | None] = "application_session"
    PATH: ClassVar[str] = "/app/sessions"
    QUOTA: ClassVar[bool] = False
    CACHED_RENDERING: ClassVar[bool] = True  # to_api(): the row and base URL only

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
            "browser_session": browser_session_api(self.browser_session),
            "application_user": urls.ref("/app/users", self.application_user_id),
            "created_at": self.api_time("created_at"),
            "last_active": self.api_time("last_active"),
            "expires_at": self.api_time("expires_at"),
            "endpoint": urls.ref("/endpoints", self.endpoint_id),
            "edge": urls.ref(edge_path(self.edge_id), self.edge_id) if self.edge_id else None,
            "route": route,
        }


async def sign_out(unit: Unit, account_id: str, application_user_id: str) -> None:
    """Delete every session of the application user (in the caller's unit of work)."""
    await unit.exec(_SIGN_OUT, {"account_id": account_id, "user_id": application_user_id})


_SIGN_OUT = Query(
    delete(ApplicationSession).where(
        ApplicationSession.account_id == bindparam("account_id"),  # type: ignore[arg-type]
        ApplicationSession.application_user_id == bindparam("user_id"),  # type: ignore[arg-type]
    )
)
