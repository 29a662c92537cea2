"""Event destinations (issue 21): a format and one target, its credential sealed under the
KEK; event subscriptions name them through event_subscription_destination

Revision ID: 0011
Revises: 0009
Create Date: 2026-11-26 11:10:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

ID_TYPE = sa.String(length=64).with_variant(sa.String(length=64, collation="C"), "postgresql")


def upgrade() -> None:
    op.create_table(
        "event_destination",
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("metadata", sa.Text(), nullable=False),
        sa.Column("id", ID_TYPE, nullable=False),
        sa.Column("account_id", ID_TYPE, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("format", sa.String(length=16), nullable=False),
        sa.Column("target", sa.JSON(), nullable=False),
        sa.Column("sealed_credential", sa.LargeBinary(), nullable=True),
        sa.ForeignKeyConstraint(["account_id"], ["account.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("event_destination", schema=None) as batch_op:
        batch_op.create_index(
            "ix_event_destination_account_id_id", ["account_id", "id"], unique=False
        )

    op.create_table(
        "event_subscription_destination",
        sa.Column("subscription_id", ID_TYPE, nullable=False),
        sa.Column("destination_id", ID_TYPE, nullable=False),
        sa.Column("account_id", ID_TYPE, nullable=False),
        sa.ForeignKeyConstraint(["account_id"], ["account.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["destination_id"], ["event_destination.id"], ondelete="RESTRICT"),
        sa.ForeignKeyConstraint(["subscription_id"], ["event_subscription.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("subscription_id", "destination_id"),
    )
    with op.batch_alter_table("event_subscription_destination", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_event_subscription_destination_destination_id"),
            ["destination_id"],
            unique=False,
        )


def downgrade() -> None:
    with op.batch_alter_table("event_subscription_destination", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_event_subscription_destination_destination_id"))

    op.drop_table("event_subscription_destination")
    with op.batch_alter_table("event_destination", schema=None) as batch_op:
        batch_op.drop_index("ix_event_destination_account_id_id")

    op.drop_table("event_destination")
