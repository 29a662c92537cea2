"""event source fields (issue 29): the fields a traffic event source captures, which the
platform's Terraform provider sends and reads back; existing sources get none ([])

Revision ID: 0020
Revises: 0019
Create Date: 2026-11-27 22:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0020"
down_revision: str | None = "0019"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("event_source", schema=None) as batch_op:
        batch_op.add_column(sa.Column("fields", sa.JSON(), nullable=False, server_default="[]"))


def downgrade() -> None:
    with op.batch_alter_table("event_source", schema=None) as batch_op:
        batch_op.drop_column("fields")
