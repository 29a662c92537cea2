"""Columns shared by every table, and the one place a row becomes its API shape."""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar, Self

from sqlalchemy import BigInteger, DateTime, Integer, String, Text
from sqlmodel import Field, SQLModel

from tunnelgw.core import timefmt, urls
from tunnelgw.storage import records

# Ids sort byte-wise (base62 in ASCII order); PostgreSQL must not apply a locale collation.
ID_TYPE = String(64).with_variant(String(64, collation="C"), "postgresql")
TIMESTAMP = DateTime(timezone=True)
# An integer primary key the database numbers: SQLite's rowid (INTEGER PRIMARY KEY), a
# PostgreSQL identity.
SEQ_TYPE = BigInteger().with_variant(Integer(), "sqlite")
# The column `info` key that marks a secret column (a token hash, a wrapped key, a sealed
# value): snapshots leave its values out unless asked to seal them (tunnelgw.services.snapshots).
SECRET = "secret"  # noqa: S105 - a key name, not a secret


def secret(effect: str) -> dict[str, Any]:
    """`sa_column_kwargs` of a secret column; `effect` says what a row loaded from a snapshot
    without the secret cannot do (the snapshot's `left_out` note)."""
    return {"info": {SECRET: effect}}


def id_field(**kwargs: Any) -> Any:
    return Field(sa_type=ID_TYPE, **kwargs)


class Row(SQLModel):
    """Base of every table. The SQLModel class is the schema (columns, indexes, migrations);
    at run time a row is a record (tunnelgw.storage.records): a plain slotted object with the
    columns and the methods of the model classes, made by `new()` or read from the database.
    So inside a model's methods `self` is that record, not an instance of the class the method
    is written in: call a base class's method explicitly (`DescribedResource.common_api(self)`
    or `self.common_api()`), never `super()` (refused when the record class is built)."""

    # The classes' pydantic validators and serializers are never used (rows are records), so
    # pydantic builds them only if something asks: ~20 ms and ~1 MiB of every start.
    model_config = {"defer_build": True}

    @classmethod
    def new(cls, **values: Any) -> Self:
        """A new row with the field defaults (a record, typed as the model)."""
        made: Self = records.new(cls, **values)
        return made

    def api_time(self, name: str) -> str | None:
        """The timestamp column `name` as the wire shows it (RFC 3339 with `Z`), None when
        unset; rendered from the stored text when the row has not parsed it. (Each record
        class replaces this with a direct lookup of its timestamp columns.)"""
        return records.wire_time(self, name)


class AccountScoped(Row):
    """Columns of every account-owned resource: id, owner account, creation time."""

    PREFIX: ClassVar[str]
    PATH: ClassVar[str]  # collection path, e.g. "/api_keys"
    # True only when `to_api()` is a pure function of the row's columns and the base URL (no
    # clock, no other rows, no per-request state): list pages then reuse each item's validated
    # JSON while its row is unchanged (tunnelgw.services.rendercache).
    CACHED_RENDERING: ClassVar[bool] = False
    # The kind in the event type catalog (`<kind>_created.v0`, ...) whose events a change of
    # a row fires (tunnelgw.services.events); None: its changes fire none.
    EVENT_KIND: ClassVar[str | None] = None
    # Whether the per-account quotas count its rows (settings `quota_default`, `quotas`; the
    # kind is its table name): a resource the API creates is counted; False for one only
    # fixtures or the platform write.
    QUOTA: ClassVar[bool] = True
    # The `api:` section of a fixture file whose items go to its create operation (`POST
    # PATH`), named like its handler module (tunnelgw.seeding.kinds); None: no such section.
    FIXTURE_SECTION: ClassVar[str | None] = None

    id: str = id_field(primary_key=True)
    account_id: str = id_field(foreign_key="account.id", ondelete="CASCADE")
    created_at: datetime = Field(default_factory=timefmt.utcnow, sa_type=TIMESTAMP)

    @property
    def uri(self) -> str:
        return f"{urls.base()}{self.PATH}/{self.id}"

    def to_api(self) -> dict[str, Any]:  # pragma: no cover - every table overrides it
        raise NotImplementedError


class Described(SQLModel):
    """The free-text `description` and `metadata` of user-managed resources."""

    description: str = Field(default="", sa_type=Text)
    # `metadata` is reserved by SQLAlchemy's declarative base; the column keeps the API name.
    meta: str = Field(default="", sa_type=Text, sa_column_kwargs={"name": "metadata"})


class Owned(SQLModel):
    """The owner of a resource that belongs to one principal of its account (API keys, tunnel
    and SSH credentials): who may change or delete it is tunnelgw.services.ownership's rule;
    deleting the principal deletes it (ON DELETE CASCADE)."""

    owner_id: str = id_field(foreign_key="principal.id", ondelete="CASCADE", index=True)


class DescribedResource(AccountScoped, Described):
    """An account-scoped resource with description and metadata."""

    def common_api(self) -> dict[str, Any]:
        """The fields every such resource shows: id, uri, created_at, description, metadata."""
        return {
            "id": self.id,
            "uri": self.uri,
            "created_at": self.api_time("created_at"),
            "description": self.description,
            "metadata": self.meta,
        }
