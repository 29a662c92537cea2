"""HTTP response backends: a fixed status, headers and body to answer traffic with."""

from __future__ import annotations

from typing import Any, ClassVar

from sqlalchemy import JSON, Index, Text
from sqlmodel import Field

from tunnelgw.models.base import DescribedResource


class HttpResponseBackend(DescribedResource, table=True):
    __tablename__ = "http_response_backend"
    __table_args__ = (Index("ix_http_response_backend_account_id_id", "account_id", "id"),)
    PREFIX: ClassVar[str] = "bkdhr"
    EVENT_KIND: ClassVar[str | None] = "http_response_backend"
    PATH: ClassVar[str] = "/backends/http_response"
    FIXTURE_SECTION: ClassVar[str | None] = "http_response_backends"
    CACHED_RENDERING: ClassVar[bool] = True  # to_api(): the row and base URL only

    body: str = Field(default="", sa_type=Text)
    # Header names stored lowercased; NULL when there are none.
    headers: dict[str, str] | None = Field(default=None, sa_type=JSON)
    status_code: int = 200

    def to_api(self) -> dict[str, Any]:
        return {
            **self.common_api(),
            "body": self.body,
            "headers": self.headers or None,
            "status_code": self.status_code,
        }
