"""Quota usage (tunnelgw.services.quotas): per account and kind, a bound no lower than the
number of the account's rows of that kind, so a create is checked against the quota without
counting the rows. Exact counts replace the bound when it reaches the quota."""

from __future__ import annotations

from sqlalchemy import String
from sqlmodel import Field

from tunnelgw.models.base import Row, id_field


class QuotaUsage(Row, table=True):
    __tablename__ = "quota_usage"

    account_id: str = id_field(primary_key=True, foreign_key="account.id", ondelete="CASCADE")
    kind: str = Field(primary_key=True, sa_type=String(64))
    # At least the account's rows of `kind`: set from an exact count, one more with each row
    # the create operations add; rows deleted leave it high (the next exact count lowers it).
    bound: int = 0
