"""event deliveries (issue 23): what each event destination was sent; fault rules can name a
destination; event sources are found by account and type

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-26 14:40:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0017"
down_revision: str | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

ID_TYPE = sa.String(length=64).with_variant(sa.String(length=64, collation="C"), "postgresql")


def upgrade() -> None:
    op.create_table(
        "event_delivery",
        sa.Column("id", ID_TYPE, nullable=False),
        sa.Column("account_id", ID_TYPE, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("event_id", ID_TYPE, nullable=False),
        sa.Column("event_type", sa.String(length=128), nullable=False),
        sa.Column("subscription_id", ID_TYPE, nullable=False),
        sa.Column("destination_id", ID_TYPE, nullable=False),
        sa.Column("event", sa.JSON(), nullable=False),
        sa.Column("outcome", sa.String(length=16), nullable=False),
        sa.Column("error", sa.JSON(), nullable=True),
        sa.ForeignKeyConstraint(["account_id"], ["account.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("event_delivery", schema=None) as batch_op:
        batch_op.create_index("ix_event_delivery_account_id_id", ["account_id", "id"], unique=False)
    with op.batch_alter_table("fault_rule", schema=None) as batch_op:
        batch_op.add_column(sa.Column("destination_id", ID_TYPE, nullable=True))
    with op.batch_alter_table("event_source", schema=None) as batch_op:
        batch_op.create_index(
            "ix_event_source_account_id_type", ["account_id", "type"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("event_source", schema=None) as batch_op:
        batch_op.drop_index("ix_event_source_account_id_type")
    with op.batch_alter_table("fault_rule", schema=None) as batch_op:
        batch_op.drop_column("destination_id")
    op.drop_table("event_delivery")
