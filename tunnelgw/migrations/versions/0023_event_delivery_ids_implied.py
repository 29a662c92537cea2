"""event deliveries' ids implied (issue 31): an event record written from this revision on
stores each delivery without its id, which is the event id's value plus the delivery's
position plus one (the values the event's id reserved). Rows already stored keep the ids
they hold, and the app reads both forms, so the upgrade changes no row; a downgrade writes
the implied ids into the deliveries, the one form the revisions before read

Revision ID: 0023
Revises: 0022
Create Date: 2026-11-30 03:00:00.000000
"""

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op

revision: str = "0023"
down_revision: str | None = "0022"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# A delivery stored with its id (as before) and without it (from this revision on).
DELIVERY_FIELDS = ("id", "subscription_id", "destination_id", "outcome", "error")
BATCH = 500
# Ids: a prefix, "_" and 27 base62 digits (tunnelgw.core.ids, as of this revision).
ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
BODY_LENGTH = 27
DELIVERY_PREFIX = "evd"

_records = sa.Table(
    "event_record",
    sa.MetaData(),
    sa.Column("id", sa.String(length=64), primary_key=True),
    sa.Column("deliveries", sa.JSON(), nullable=False),
)


def upgrade() -> None:
    pass  # no row changes: the rows stored so far hold their deliveries' ids


def downgrade() -> None:
    connection = op.get_bind()
    after: str | None = None
    while True:
        query = sa.select(_records).order_by(_records.c.id).limit(BATCH)
        if after is not None:
            query = query.where(_records.c.id > after)
        rows = connection.execute(query).all()
        if not rows:
            break
        after = rows[-1].id
        for row in rows:
            if row.deliveries and len(row.deliveries[0]) < len(DELIVERY_FIELDS):
                update = _records.update().where(_records.c.id == row.id)
                connection.execute(update.values(deliveries=_with_ids(row.id, row.deliveries)))


def _with_ids(event_id: str, deliveries: list[list[Any]]) -> list[list[Any]]:
    """`deliveries` stored without ids, each with its implied id first."""
    value = 0
    for char in event_id.partition("_")[2]:
        value = value * 62 + ALPHABET.index(char)
    return [[_id(value + 1 + n), *item] for n, item in enumerate(deliveries)]


def _id(value: int) -> str:
    digits = []
    for _ in range(BODY_LENGTH):
        value, digit = divmod(value, 62)
        digits.append(ALPHABET[digit])
    return DELIVERY_PREFIX + "_" + "".join(reversed(digits))
