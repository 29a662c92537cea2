"""Vaults and their secrets (issue 21): a vault's name is unique in its account, a secret's in
its vault; a secret's value is stored encrypted under the key-encryption key

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-26 11:30:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

ID_TYPE = sa.String(length=64).with_variant(sa.String(length=64, collation="C"), "postgresql")


def upgrade() -> None:
    op.create_table(
        "vault",
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("metadata", sa.Text(), nullable=False),
        sa.Column("id", ID_TYPE, nullable=False),
        sa.Column("account_id", ID_TYPE, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("created_by", ID_TYPE, nullable=False),
        sa.Column("last_updated_by", ID_TYPE, nullable=False),
        sa.ForeignKeyConstraint(["account_id"], ["account.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("account_id", "name", name="uq_vault_account_id_name"),
    )
    with op.batch_alter_table("vault", schema=None) as batch_op:
        batch_op.create_index("ix_vault_account_id_id", ["account_id", "id"], unique=False)

    op.create_table(
        "vault_secret",
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("metadata", sa.Text(), nullable=False),
        sa.Column("id", ID_TYPE, nullable=False),
        sa.Column("account_id", ID_TYPE, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("vault_id", ID_TYPE, nullable=False),
        sa.Column("vault_name", sa.String(length=64), nullable=False),
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("wrapped_value", sa.LargeBinary(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("created_by", ID_TYPE, nullable=False),
        sa.Column("last_updated_by", ID_TYPE, nullable=False),
        sa.ForeignKeyConstraint(["account_id"], ["account.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["vault_id"], ["vault.id"], ondelete="RESTRICT"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("vault_id", "name", name="uq_vault_secret_vault_id_name"),
    )
    with op.batch_alter_table("vault_secret", schema=None) as batch_op:
        batch_op.create_index("ix_vault_secret_account_id_id", ["account_id", "id"], unique=False)
        batch_op.create_index("ix_vault_secret_vault_id_id", ["vault_id", "id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("vault_secret", schema=None) as batch_op:
        batch_op.drop_index("ix_vault_secret_vault_id_id")
        batch_op.drop_index("ix_vault_secret_account_id_id")

    op.drop_table("vault_secret")
    with op.batch_alter_table("vault", schema=None) as batch_op:
        batch_op.drop_index("ix_vault_account_id_id")

    op.drop_table("vault")
