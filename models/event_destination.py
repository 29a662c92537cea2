"""Event destinations (`ed_`): where an event subscription's events go (a format and one
target). The target's credential (an AWS secret access key, a Datadog API key, an Azure
client secret) is stored sealed under the KEK and shows as `""`; the rest of the target is
kept as given."""

from __future__ import annotations

from typing import Any, ClassVar

from sqlalchemy import JSON, Index, LargeBinary, String
from sqlmodel import Field

from tunnelgw.models.base import DescribedResource, secret


class EventDestination(DescribedResource, table=True):
    __tablename__ = "event_destination"
    __table_args__ = (Index("ix_event_destination_account_id_id", "account_id", "id"),)
    PREFIX: ClassVar[str] = "ed"
    EVENT_KIND: ClassVar[str | None] = "event_destination"
    PATH: ClassVar[str] = "/event_destinations"
    FIXTURE_SECTION: ClassVar[str | None] = "event_destinations"

    format: str = Field(default="json", sa_type=String(16))
    # `{kind: {...}}` with the credential blanked to "" (tunnelgw.rules.event_targets).
    target: dict[str, Any] = Field(default_factory=dict, sa_type=JSON)
    # The credential, AES-GCM under the KEK with the row id as associated data
    # (tunnelgw.crypto.keys.wrap); None when the target has none. Never in the API shape.
    sealed_credential: bytes | None = Field(
        default=None,
        sa_type=LargeBinary,
        sa_column_kwargs=secret(
            "the target has no credential: update the destination with its credential"
        ),
    )

    def to_api(self) -> dict[str, Any]:
        return {**self.common_api(), "format": self.format, "target": self.target}
