"""account event routes (issue 31): each account keeps the (subscription, destination) pairs
of each event type its subscriptions route, as JSON text, so a change fires without reading
the subscriptions; filled here from the existing subscriptions

Revision ID: 0022
Revises: 0021
Create Date: 2026-11-28 16:00:00.000000
"""

import itertools
import json
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0022"
down_revision: str | None = "0021"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Each account's routes, in the order tunnelgw.services.events writes them.
_ROUTES = sa.text(
    "SELECT s.account_id, s.type, s.subscription_id, d.destination_id "
    "FROM event_source AS s JOIN event_subscription_destination AS d "
    "ON d.subscription_id = s.subscription_id "
    "ORDER BY s.account_id, s.subscription_id, d.destination_id"
)
_SET = sa.text("UPDATE account SET event_routes = :routes WHERE id = :account")


def upgrade() -> None:
    with op.batch_alter_table("account", schema=None) as batch_op:
        batch_op.add_column(sa.Column("event_routes", sa.Text(), nullable=True))
    connection = op.get_bind()
    rows = connection.execute(_ROUTES).all()
    for account_id, found in itertools.groupby(rows, key=lambda row: row[0]):
        routes: dict[str, list[list[str]]] = {}
        for _, type_, subscription_id, destination_id in found:
            routes.setdefault(type_, []).append([subscription_id, destination_id])
        text = json.dumps(routes, separators=(",", ":"))
        connection.execute(_SET, {"routes": text, "account": account_id})


def downgrade() -> None:
    with op.batch_alter_table("account", schema=None) as batch_op:
        batch_op.drop_column("event_routes")
