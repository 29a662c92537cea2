"""Fixture files loaded into an account (by digest), so `serve --seed` loads a file once."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import String
from sqlmodel import Field

from tunnelgw.core import timefmt
from tunnelgw.models.base import TIMESTAMP, Row, id_field


class FixtureLoad(Row, table=True):
    __tablename__ = "fixture_load"

    account_id: str = id_field(primary_key=True, foreign_key="account.id", ondelete="CASCADE")
    digest: str = Field(primary_key=True, sa_type=String(64))  # SHA-256 of the file, hex
    loaded_at: datetime = Field(default_factory=timefmt.utcnow, sa_type=TIMESTAMP)
