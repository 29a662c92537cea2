"""AI gateway API keys (issue 28): the token's SHA-256 and redacted display form, the
endpoint a key is for (unset when the endpoint goes), who created and last changed it

Revision ID: 0019
Revises: 0018
Create Date: 2026-11-27 21:30:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0019"
down_revision: str | None = "0018"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

ID_TYPE = sa.String(length=64).with_variant(sa.String(length=64, collation="C"), "postgresql")


def upgrade() -> None:
    op.create_table(
        "ai_gateway_api_key",
        sa.Column("id", ID_TYPE, nullable=False),
        sa.Column("account_id", ID_TYPE, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("metadata", sa.Text(), nullable=False),
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("display_name", sa.String(length=32), nullable=False),
        sa.Column("endpoint_id", ID_TYPE, nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("created_by", ID_TYPE, nullable=False),
        sa.Column("last_updated_by", ID_TYPE, nullable=False),
        sa.ForeignKeyConstraint(["account_id"], ["account.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["endpoint_id"], ["endpoint.id"], ondelete="SET NULL"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("token_hash"),
    )
    with op.batch_alter_table("ai_gateway_api_key", schema=None) as batch_op:
        batch_op.create_index(
            "ix_ai_gateway_api_key_account_id_id", ["account_id", "id"], unique=False
        )
        batch_op.create_index(
            batch_op.f("ix_ai_gateway_api_key_endpoint_id"), ["endpoint_id"], unique=False
        )


def downgrade() -> None:
    op.drop_table("ai_gateway_api_key")
