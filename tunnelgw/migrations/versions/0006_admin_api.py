"""admin API (issue 12): an account's simulated clock and its fault rules

Existing accounts keep the real time (offset 0) and have no fault rules.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-23 10:40:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

ID_TYPE = sa.String(length=64).with_variant(sa.String(length=64, collation="C"), "postgresql")


def upgrade() -> None:
    with op.batch_alter_table("account", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("clock_offset_seconds", sa.BigInteger(), nullable=False, server_default="0")
        )
    op.create_table(
        "fault_rule",
        sa.Column("id", ID_TYPE, nullable=False),
        sa.Column("account_id", ID_TYPE, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("operation", sa.String(length=128), nullable=False),
        sa.Column("status", sa.Integer(), nullable=True),
        sa.Column("latency_ms", sa.Integer(), nullable=False),
        sa.Column("probability", sa.Float(), nullable=False),
        sa.Column("remaining", sa.Integer(), nullable=True),
        sa.ForeignKeyConstraint(["account_id"], ["account.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("fault_rule", schema=None) as batch_op:
        batch_op.create_index(
            "ix_fault_rule_account_operation", ["account_id", "operation"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("fault_rule", schema=None) as batch_op:
        batch_op.drop_index("ix_fault_rule_account_operation")
    op.drop_table("fault_rule")
    with op.batch_alter_table("account", schema=None) as batch_op:
        batch_op.drop_column("clock_offset_seconds")
