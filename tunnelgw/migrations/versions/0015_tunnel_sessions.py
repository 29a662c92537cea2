"""tunnel sessions started by simulated agents (issue 22); tunnels and endpoints name the
session that started them

Revision ID: 0015
Revises: 0009
Create Date: 2026-11-26 11:40:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

ID_TYPE = sa.String(length=64).with_variant(sa.String(length=64, collation="C"), "postgresql")


def upgrade() -> None:
    op.create_table(
        "tunnel_session",
        sa.Column("id", ID_TYPE, nullable=False),
        sa.Column("account_id", ID_TYPE, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("agent_version", sa.String(length=32), nullable=False),
        sa.Column("os", sa.String(length=32), nullable=False),
        sa.Column("region", sa.String(length=8), nullable=False),
        sa.Column("ip", sa.String(length=64), nullable=False),
        sa.Column("transport", sa.String(length=16), nullable=False),
        sa.Column("metadata", sa.Text(), nullable=False),
        sa.Column("credential_id", ID_TYPE, nullable=False),
        sa.Column("updated_to", sa.String(length=32), nullable=False),
        sa.ForeignKeyConstraint(["account_id"], ["account.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("tunnel_session", schema=None) as batch_op:
        batch_op.create_index("ix_tunnel_session_account_id_id", ["account_id", "id"], unique=False)
    with op.batch_alter_table("tunnel", schema=None) as batch_op:
        batch_op.add_column(sa.Column("tunnel_session_id", ID_TYPE, nullable=True))
        batch_op.create_index(
            batch_op.f("ix_tunnel_tunnel_session_id"), ["tunnel_session_id"], unique=False
        )
    with op.batch_alter_table("endpoint", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_endpoint_tunnel_session_id"), ["tunnel_session_id"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("endpoint", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_endpoint_tunnel_session_id"))
    with op.batch_alter_table("tunnel", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_tunnel_tunnel_session_id"))
        batch_op.drop_column("tunnel_session_id")
    op.drop_table("tunnel_session")
