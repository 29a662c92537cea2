"""Fault rules of the admin API (`/_admin/faults`): errors and latency injected into one
operation's requests of an account, or failures into its event deliveries, for testing
clients' retry logic."""

from __future__ import annotations

from typing import Any, ClassVar

from sqlalchemy import Index, String
from sqlmodel import Field

from tunnelgw.models.base import ID_TYPE, AccountScoped


class FaultRule(AccountScoped, table=True):
    __tablename__ = "fault_rule"
    PREFIX: ClassVar[str] = "flt"
    PATH: ClassVar[str] = "/_admin/faults"
    QUOTA: ClassVar[bool] = False
    __table_args__ = (Index("ix_fault_rule_account_operation", "account_id", "operation"),)

    operation: str = Field(sa_type=String(128))  # an operationId of the spec, or faults.DELIVER
    # A faults.DELIVER rule's event destination (None: every destination of the account).
    destination_id: str | None = Field(default=None, sa_type=ID_TYPE)
    status: int | None = None  # the error to answer, or None (latency only)
    latency_ms: int = 0
    probability: float = 1.0
    remaining: int | None = None  # requests left to hit; None: until cleared

    def to_api(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "created_at": self.api_time("created_at"),
            "operation": self.operation,
            "destination_id": self.destination_id,
            "status": self.status,
            "latency_ms": self.latency_ms,
            "probability": self.probability,
            "remaining": self.remaining,
        }
