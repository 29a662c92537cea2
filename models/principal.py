"""Principals: the users (`usr_`) and bots (`bot_`) of an account that own API keys."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from sqlalchemy import Index
from sqlmodel import Field

from models.base import TIMESTAMP, Row, id_field
from tunnelgw.core import timefmt

Kind = Literal["user", "bot"]
PREFIXES: dict[str, str] = {"user": "usr", "bot": "bot"}


class Principal(Row, table=True):
    __table_args__ = (Index("ix_principal_account_id_id", "account_id", "id"),)

    id: str = id_field(primary_key=True)
    account_id: str = id_field(foreign_key="account.id", ondelete="CASCADE")
    kind: str
    name: str = ""
    is_admin: bool = False
    created_at: datetime = Field(default_factory=timefmt.utcnow, sa_type=TIMESTAMP)
