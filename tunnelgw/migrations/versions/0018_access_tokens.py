"""access tokens (issue 28): bearer credentials with scopes; the request journal records which
credential (API key or access token) and which scope each request used

Revision ID: 0018
Revises: 0017
Create Date: 2026-11-27 21:30:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0018"
down_revision: str | None = "0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

ID_TYPE = sa.String(length=64).with_variant(sa.String(length=64, collation="C"), "postgresql")


def upgrade() -> None:
    op.create_table(
        "access_token",
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("metadata", sa.Text(), nullable=False),
        sa.Column("id", ID_TYPE, nullable=False),
        sa.Column("account_id", ID_TYPE, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("owner_id", ID_TYPE, nullable=False),
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("scopes", sa.JSON(), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(["account_id"], ["account.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["owner_id"], ["principal.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("token_hash"),
    )
    with op.batch_alter_table("access_token", schema=None) as batch_op:
        batch_op.create_index("ix_access_token_account_id_id", ["account_id", "id"], unique=False)
        batch_op.create_index(batch_op.f("ix_access_token_owner_id"), ["owner_id"], unique=False)
    with op.batch_alter_table("request_journal", schema=None) as batch_op:
        batch_op.alter_column("api_key_id", existing_type=ID_TYPE, nullable=True)
        batch_op.add_column(sa.Column("access_token_id", ID_TYPE, nullable=True))
        batch_op.add_column(sa.Column("scope", sa.String(length=64), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("request_journal", schema=None) as batch_op:
        batch_op.drop_column("scope")
        batch_op.drop_column("access_token_id")
    # Entries an access token made have no API key: they go, so the column can be NOT NULL.
    op.execute("DELETE FROM request_journal WHERE api_key_id IS NULL")
    with op.batch_alter_table("request_journal", schema=None) as batch_op:
        batch_op.alter_column("api_key_id", existing_type=ID_TYPE, nullable=False)
    with op.batch_alter_table("access_token", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_access_token_owner_id"))
        batch_op.drop_index("ix_access_token_account_id_id")
    op.drop_table("access_token")
