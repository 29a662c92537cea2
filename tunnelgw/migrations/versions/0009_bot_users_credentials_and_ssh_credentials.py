"""Bot users (principals become active or inactive; existing ones are active), tunnel
credentials and SSH credentials (issue 20), owned by principals and deleted with them

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-26 08:59:37.036270
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

ID_TYPE = sa.String(length=64).with_variant(sa.String(length=64, collation="C"), "postgresql")


def upgrade() -> None:
    op.create_table(
        "credential",
        sa.Column("owner_id", ID_TYPE, nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("metadata", sa.Text(), nullable=False),
        sa.Column("id", ID_TYPE, nullable=False),
        sa.Column("account_id", ID_TYPE, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("acl", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(["account_id"], ["account.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["owner_id"], ["principal.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("token_hash"),
    )
    with op.batch_alter_table("credential", schema=None) as batch_op:
        batch_op.create_index("ix_credential_account_id_id", ["account_id", "id"], unique=False)
        batch_op.create_index(batch_op.f("ix_credential_owner_id"), ["owner_id"], unique=False)

    op.create_table(
        "ssh_credential",
        sa.Column("owner_id", ID_TYPE, nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("metadata", sa.Text(), nullable=False),
        sa.Column("id", ID_TYPE, nullable=False),
        sa.Column("account_id", ID_TYPE, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("public_key", sa.Text(), nullable=False),
        sa.Column("acl", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(["account_id"], ["account.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["owner_id"], ["principal.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("ssh_credential", schema=None) as batch_op:
        batch_op.create_index("ix_ssh_credential_account_id_id", ["account_id", "id"], unique=False)
        batch_op.create_index(batch_op.f("ix_ssh_credential_owner_id"), ["owner_id"], unique=False)

    with op.batch_alter_table("principal", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("active", sa.Boolean(), nullable=False, server_default=sa.true())
        )


def downgrade() -> None:
    with op.batch_alter_table("principal", schema=None) as batch_op:
        batch_op.drop_column("active")

    with op.batch_alter_table("ssh_credential", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_ssh_credential_owner_id"))
        batch_op.drop_index("ix_ssh_credential_account_id_id")

    op.drop_table("ssh_credential")
    with op.batch_alter_table("credential", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_credential_owner_id"))
        batch_op.drop_index("ix_credential_account_id_id")

    op.drop_table("credential")
