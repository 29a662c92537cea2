"""IP policies, their rules and IP restrictions (issue 20); an account's summary of its `api`
restrictions (existing accounts have none)

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-26 08:01:24.057342
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

ID_TYPE = sa.String(length=64).with_variant(sa.String(length=64, collation="C"), "postgresql")


def upgrade() -> None:
    op.create_table(
        "ip_policy",
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("metadata", sa.Text(), nullable=False),
        sa.Column("id", ID_TYPE, nullable=False),
        sa.Column("account_id", ID_TYPE, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["account_id"], ["account.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("ip_policy", schema=None) as batch_op:
        batch_op.create_index("ix_ip_policy_account_id_id", ["account_id", "id"], unique=False)

    op.create_table(
        "ip_restriction",
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("metadata", sa.Text(), nullable=False),
        sa.Column("id", ID_TYPE, nullable=False),
        sa.Column("account_id", ID_TYPE, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("type", sa.String(length=16), nullable=False),
        sa.Column("enforced", sa.Boolean(), nullable=False),
        sa.ForeignKeyConstraint(["account_id"], ["account.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("ip_restriction", schema=None) as batch_op:
        batch_op.create_index("ix_ip_restriction_account_id_id", ["account_id", "id"], unique=False)

    op.create_table(
        "ip_policy_rule",
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("metadata", sa.Text(), nullable=False),
        sa.Column("id", ID_TYPE, nullable=False),
        sa.Column("account_id", ID_TYPE, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("ip_policy_id", ID_TYPE, nullable=False),
        sa.Column("cidr", sa.String(length=64), nullable=False),
        sa.Column("action", sa.String(length=8), nullable=False),
        sa.ForeignKeyConstraint(["account_id"], ["account.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["ip_policy_id"], ["ip_policy.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("ip_policy_rule", schema=None) as batch_op:
        batch_op.create_index("ix_ip_policy_rule_account_id_id", ["account_id", "id"], unique=False)
        batch_op.create_index(
            batch_op.f("ix_ip_policy_rule_ip_policy_id"), ["ip_policy_id"], unique=False
        )

    op.create_table(
        "ip_restriction_policy",
        sa.Column("restriction_id", ID_TYPE, nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("ip_policy_id", ID_TYPE, nullable=False),
        sa.Column("account_id", ID_TYPE, nullable=False),
        sa.ForeignKeyConstraint(["account_id"], ["account.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["ip_policy_id"], ["ip_policy.id"], ondelete="RESTRICT"),
        sa.ForeignKeyConstraint(["restriction_id"], ["ip_restriction.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("restriction_id", "position"),
    )
    with op.batch_alter_table("ip_restriction_policy", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_ip_restriction_policy_ip_policy_id"), ["ip_policy_id"], unique=False
        )

    with op.batch_alter_table("account", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("api_restriction", sa.Integer(), nullable=False, server_default="0")
        )


def downgrade() -> None:
    with op.batch_alter_table("account", schema=None) as batch_op:
        batch_op.drop_column("api_restriction")

    with op.batch_alter_table("ip_restriction_policy", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_ip_restriction_policy_ip_policy_id"))

    op.drop_table("ip_restriction_policy")
    with op.batch_alter_table("ip_policy_rule", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_ip_policy_rule_ip_policy_id"))
        batch_op.drop_index("ix_ip_policy_rule_account_id_id")

    op.drop_table("ip_policy_rule")
    with op.batch_alter_table("ip_restriction", schema=None) as batch_op:
        batch_op.drop_index("ix_ip_restriction_account_id_id")

    op.drop_table("ip_restriction")
    with op.batch_alter_table("ip_policy", schema=None) as batch_op:
        batch_op.drop_index("ix_ip_policy_account_id_id")

    op.drop_table("ip_policy")
