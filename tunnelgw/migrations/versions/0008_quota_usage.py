"""quota usage: a bound on each account's rows of each counted kind, so a create is checked
against its quota without counting (existing accounts start without one: their first create
of a kind counts once)

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-26 09:22:58.177728
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

ID_TYPE = sa.String(length=64).with_variant(sa.String(length=64, collation="C"), "postgresql")


def upgrade() -> None:
    op.create_table(
        "quota_usage",
        sa.Column("account_id", ID_TYPE, nullable=False),
        sa.Column("kind", sa.String(length=64), nullable=False),
        sa.Column("bound", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["account_id"], ["account.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("account_id", "kind"),
    )


def downgrade() -> None:
    op.drop_table("quota_usage")
