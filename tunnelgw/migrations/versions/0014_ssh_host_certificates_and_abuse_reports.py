"""SSH host certificates and abuse reports (issue 22)

Revision ID: 0014
Revises: 0009
Create Date: 2026-11-26 11:30:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

ID_TYPE = sa.String(length=64).with_variant(sa.String(length=64, collation="C"), "postgresql")


def upgrade() -> None:
    op.create_table(
        "ssh_host_certificate",
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("metadata", sa.Text(), nullable=False),
        sa.Column("id", ID_TYPE, nullable=False),
        sa.Column("account_id", ID_TYPE, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("ssh_certificate_authority_id", ID_TYPE, nullable=False),
        sa.Column("public_key", sa.Text(), nullable=False),
        sa.Column("key_type", sa.String(length=16), nullable=False),
        sa.Column("principals", sa.JSON(), nullable=False),
        sa.Column("valid_after", sa.DateTime(timezone=True), nullable=False),
        sa.Column("valid_until", sa.DateTime(timezone=True), nullable=False),
        sa.Column("certificate", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(["account_id"], ["account.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("ssh_host_certificate", schema=None) as batch_op:
        batch_op.create_index(
            "ix_ssh_host_certificate_account_id_id", ["account_id", "id"], unique=False
        )
        batch_op.create_index(
            "ix_ssh_host_certificate_ca_valid_until",
            ["ssh_certificate_authority_id", "valid_until"],
            unique=False,
        )

    op.create_table(
        "abuse_report",
        sa.Column("id", ID_TYPE, nullable=False),
        sa.Column("account_id", ID_TYPE, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("urls", sa.JSON(), nullable=False),
        sa.Column("metadata", sa.Text(), nullable=False),
        sa.Column("hostnames", sa.JSON(), nullable=False),
        sa.Column("step_seconds", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["account_id"], ["account.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("abuse_report", schema=None) as batch_op:
        batch_op.create_index("ix_abuse_report_account_id_id", ["account_id", "id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("abuse_report", schema=None) as batch_op:
        batch_op.drop_index("ix_abuse_report_account_id_id")

    op.drop_table("abuse_report")
    with op.batch_alter_table("ssh_host_certificate", schema=None) as batch_op:
        batch_op.drop_index("ix_ssh_host_certificate_ca_valid_until")
        batch_op.drop_index("ix_ssh_host_certificate_account_id_id")

    op.drop_table("ssh_host_certificate")
