"""Accounts: the tenant boundary. Every other row belongs to one."""

from __future__ import annotations

from datetime import datetime
from typing import ClassVar

from sqlalchemy import BigInteger, Text, false
from sqlmodel import Field

from tunnelgw.core import timefmt
from tunnelgw.models.base import TIMESTAMP, Row, id_field

# Account.api_restriction: none, only unenforced ones (refusals recorded), an enforced one.
API_NONE, API_RECORDED, API_ENFORCED = 0, 1, 2


class Account(Row, table=True):
    PREFIX: ClassVar[str] = "acct"

    id: str = id_field(primary_key=True)
    name: str = ""
    created_at: datetime = Field(default_factory=timefmt.utcnow, sa_type=TIMESTAMP)
    # The account's simulated clock (admin API): seconds added to the real time (up to the
    # year 9000: past a 32-bit integer).
    clock_offset_seconds: int = Field(
        default=0, sa_type=BigInteger, sa_column_kwargs={"server_default": "0"}
    )
    # What `api` IP restrictions the account has (tunnelgw.models.ip_restriction; API_NONE,
    # API_RECORDED, API_ENFORCED), kept by the restriction operations: the credential check
    # reads it, and only a request of an account with some reads the restrictions.
    api_restriction: int = Field(default=0, sa_column_kwargs={"server_default": "0"})
    # Whether the account may have fault rules (admin API): set when one is made, cleared with
    # them and by reset. The credential check reads it, and only a request of an account with
    # some reads the rules (a rule spent by its count leaves it set until they are cleared).
    fault_rules: bool = Field(default=False, sa_column_kwargs={"server_default": false()})
    # The account's event routes: which (subscription, destination) pairs each event type goes
    # to, from its subscriptions' sources and destinations, as JSON text (`{type: [[sub,
    # dest], ...]}`); None when it has none. Kept by tunnelgw.services.events whenever a unit
    # changes them; the credential check reads it, and a change fires by it without reading
    # the subscriptions.
    event_routes: str | None = Field(default=None, sa_type=Text, nullable=True)
