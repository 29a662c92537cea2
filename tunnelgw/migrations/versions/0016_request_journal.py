"""request journal: the API requests of each account while the admin API is on (issue 23);
whether an account may have fault rules, so the others' requests do not read them

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-26 14:30:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0016"
down_revision: str | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

ID_TYPE = sa.String(length=64).with_variant(sa.String(length=64, collation="C"), "postgresql")
SEQ_TYPE = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    with op.batch_alter_table("account", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("fault_rules", sa.Boolean(), nullable=False, server_default=sa.false())
        )
    # Accounts that have rules already keep them applied.
    op.execute(
        "UPDATE account SET fault_rules = TRUE WHERE id IN (SELECT account_id FROM fault_rule)"
    )
    op.create_table(
        "request_journal",
        sa.Column("seq", SEQ_TYPE, nullable=False, autoincrement=True),
        sa.Column("account_id", ID_TYPE, nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("request_id", sa.String(length=64), nullable=False),
        sa.Column("method", sa.String(length=8), nullable=False),
        sa.Column("path", sa.Text(), nullable=False),
        sa.Column("query", sa.Text(), nullable=False),
        sa.Column("operation", sa.String(length=128), nullable=False),
        sa.Column("status", sa.Integer(), nullable=False),
        sa.Column("error_code", sa.String(length=64), nullable=True),
        sa.Column("principal_id", ID_TYPE, nullable=False),
        sa.Column("api_key_id", ID_TYPE, nullable=False),
        sa.Column("duration_ms", sa.Float(), nullable=False),
        sa.Column("body_bytes", sa.Integer(), nullable=False),
        sa.Column("body", sa.JSON(), nullable=True),
        sa.ForeignKeyConstraint(["account_id"], ["account.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("seq"),
    )
    with op.batch_alter_table("request_journal", schema=None) as batch_op:
        batch_op.create_index(
            "ix_request_journal_account_id_seq", ["account_id", "seq"], unique=False
        )


def downgrade() -> None:
    op.drop_table("request_journal")
    with op.batch_alter_table("account", schema=None) as batch_op:
        batch_op.drop_column("fault_rules")
