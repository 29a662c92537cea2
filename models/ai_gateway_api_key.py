"""AI gateway API keys (`aigk_`): the keys clients of the account's AI gateway endpoints send,
with the endpoint a key is for. Only the SHA-256 of the token is stored; `display_name` is
the token's redacted form, kept at create so a key can be told apart later. They are no
credential of this API: the bearer check reads `api_key` only."""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar

from sqlalchemy import Index, String
from sqlmodel import Field

from tunnelgw.core import timefmt, urls
from tunnelgw.models.base import ID_TYPE, TIMESTAMP, DescribedResource, id_field, secret
from tunnelgw.models.principal import principal_ref

# The token's first and last characters a redacted display form keeps (as the platform's
# dashboard shows provider keys: the first ten, `***`, the last four).
SHOWN_HEAD, SHOWN_TAIL = 10, 4


def redacted(token: str) -> str:
    """The display form of a token: its head and tail around `***`."""
    return f"{token[:SHOWN_HEAD]}***{token[-SHOWN_TAIL:]}"


class AiGatewayApiKey(DescribedResource, table=True):
    __tablename__ = "ai_gateway_api_key"
    __table_args__ = (Index("ix_ai_gateway_api_key_account_id_id", "account_id", "id"),)
    PREFIX: ClassVar[str] = "aigk"
    PATH: ClassVar[str] = "/ai_gateway_api_keys"
    FIXTURE_SECTION: ClassVar[str | None] = "ai_gateway_api_keys"
    CACHED_RENDERING: ClassVar[bool] = True  # to_api(): the row and base URL only

    token_hash: str = Field(
        max_length=64,
        unique=True,
        sa_column_kwargs=secret("the key has no working token: create a new key"),
    )
    display_name: str = Field(sa_type=String(32))
    # The endpoint the key is for; deleting the endpoint unsets it (its Ref never dangles).
    endpoint_id: str | None = id_field(
        default=None, nullable=True, foreign_key="endpoint.id", ondelete="SET NULL", index=True
    )
    updated_at: datetime = Field(default_factory=timefmt.utcnow, sa_type=TIMESTAMP)
    created_by: str = Field(sa_type=ID_TYPE)
    last_updated_by: str = Field(sa_type=ID_TYPE)

    def to_api(self, token: str | None = None) -> dict[str, Any]:
        """The API shape; `token` is passed only by the create operation."""
        return {
            **self.common_api(),
            "updated_at": self.api_time("updated_at"),
            "created_by": principal_ref(self.created_by),
            "last_updated_by": principal_ref(self.last_updated_by),
            "endpoint": urls.ref("/endpoints", self.endpoint_id),
            "token": token,
            "display_name": self.display_name,
            # The server sees no AI gateway traffic, so no key has been used.
            "last_used": None,
        }
