"""Kubernetes operators (issue 21): registrations with their deployment, features, region and
binding (endpoint selectors, the CSR last signed and the client certificate issued from it)

Revision ID: 0013
Revises: 0009
Create Date: 2026-11-26 11:05:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

ID_TYPE = sa.String(length=64).with_variant(sa.String(length=64, collation="C"), "postgresql")


def upgrade() -> None:
    op.create_table(
        "kubernetes_operator",
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("metadata", sa.Text(), nullable=False),
        sa.Column("id", ID_TYPE, nullable=False),
        sa.Column("account_id", ID_TYPE, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("principal_id", ID_TYPE, nullable=False),
        sa.Column("enabled_features", sa.JSON(), nullable=False),
        sa.Column("region", sa.String(length=16), nullable=False),
        sa.Column("deployment_name", sa.Text(), nullable=False),
        sa.Column("deployment_namespace", sa.Text(), nullable=False),
        sa.Column("deployment_version", sa.Text(), nullable=False),
        sa.Column("deployment_cluster_name", sa.Text(), nullable=False),
        sa.Column("endpoint_selectors", sa.JSON(), nullable=True),
        sa.Column("ingress_endpoint", sa.Text(), nullable=True),
        sa.Column("binding_csr", sa.Text(), nullable=True),
        sa.Column("cert_pem", sa.Text(), nullable=True),
        sa.Column("cert_not_before", sa.DateTime(timezone=True), nullable=True),
        sa.Column("cert_not_after", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(["account_id"], ["account.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("kubernetes_operator", schema=None) as batch_op:
        batch_op.create_index(
            "ix_kubernetes_operator_account_id_id", ["account_id", "id"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("kubernetes_operator", schema=None) as batch_op:
        batch_op.drop_index("ix_kubernetes_operator_account_id_id")

    op.drop_table("kubernetes_operator")
