"""event records (issue 31): one row per fired event with its deliveries, in place of one row
per event and destination (each of which held the whole event); existing deliveries are
carried over, grouped by their event, and back on a downgrade

Revision ID: 0021
Revises: 0020
Create Date: 2026-11-28 13:00:00.000000
"""

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op

revision: str = "0021"
down_revision: str | None = "0020"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

ID_TYPE = sa.String(length=64).with_variant(sa.String(length=64, collation="C"), "postgresql")
# A delivery in a record: the values of these fields, in a list (tunnelgw.models.event_record).
DELIVERY_FIELDS = ("id", "subscription_id", "destination_id", "outcome", "error")
BATCH = 500

_meta = sa.MetaData()
# The account table, as far as the two tables' foreign keys need it (never created here).
sa.Table("account", _meta, sa.Column("id", ID_TYPE, primary_key=True))


def _owned(name: str, *columns: sa.Column[Any], index: tuple[str, ...]) -> sa.Table:
    """An account's append-only table: its columns after id, account_id and created_at, and
    its index (`ix_<name>_account_id_id`). JSON columns read and write Python values."""
    return sa.Table(
        name,
        _meta,
        sa.Column("id", ID_TYPE, primary_key=True),
        sa.Column(
            "account_id",
            ID_TYPE,
            sa.ForeignKey("account.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        *columns,
        sa.Index(f"ix_{name}_account_id_id", *index),
    )


# The table before this revision (as 0017 made it) and after it.
_deliveries = _owned(
    "event_delivery",
    sa.Column("event_id", ID_TYPE, nullable=False),
    sa.Column("event_type", sa.String(length=128), nullable=False),
    sa.Column("subscription_id", ID_TYPE, nullable=False),
    sa.Column("destination_id", ID_TYPE, nullable=False),
    sa.Column("event", sa.JSON(), nullable=False),
    sa.Column("outcome", sa.String(length=16), nullable=False),
    # None: SQL NULL, as the app writes it.
    sa.Column("error", sa.JSON(none_as_null=True), nullable=True),
    index=("account_id", "id"),
)
_records = _owned(
    "event_record",
    sa.Column("event_type", sa.String(length=128), nullable=False),
    sa.Column("event", sa.JSON(), nullable=False),
    sa.Column("deliveries", sa.JSON(), nullable=False),
    sa.Column("delivery_count", sa.Integer(), nullable=False),
    index=("account_id", "id", "delivery_count"),
)


def upgrade() -> None:
    _records.create(op.get_bind())
    _carry(_records_of)
    op.drop_table("event_delivery")


def downgrade() -> None:
    _deliveries.create(op.get_bind())
    _carry(_deliveries_of)
    op.drop_table("event_record")


def _carry(convert: Any) -> None:
    """Copy the old table's rows into the new one through `convert`, a batch at a time (an
    event's delivery rows in order of event, then delivery: each event's are consecutive)."""
    connection = op.get_bind()
    upgrading = convert is _records_of
    source, target = (_deliveries, _records) if upgrading else (_records, _deliveries)
    key = (source.c.event_id, source.c.id) if upgrading else (source.c.id,)
    after: tuple[Any, ...] | None = None
    pending: list[Any] = []  # upgrading: the rows of an event not yet complete
    while True:
        query = sa.select(source).order_by(*key).limit(BATCH)
        if after is not None:
            query = query.where(sa.tuple_(*key) > sa.tuple_(*after))
        rows = connection.execute(query).all()
        if not rows:
            break
        after = tuple(getattr(rows[-1], column.name) for column in key)
        written, pending = convert([*pending, *rows], last=False)
        if written:
            connection.execute(target.insert(), written)
    written, _ = convert(pending, last=True)
    if written:
        connection.execute(target.insert(), written)


def _records_of(rows: list[Any], *, last: bool) -> tuple[list[dict[str, Any]], list[Any]]:
    """The event records of delivery rows (each event's consecutive, in id order), and the
    rows of the last event unless `last` (more of it may follow)."""
    groups: dict[str, list[Any]] = {}
    for row in rows:
        groups.setdefault(row.event_id, []).append(row)
    held: list[Any] = []
    if not last and rows:
        held = groups.pop(rows[-1].event_id)
    records = [
        {
            "id": event_id,
            "account_id": group[0].account_id,
            "created_at": group[0].created_at,
            "event_type": group[0].event_type,
            "event": group[0].event,
            "deliveries": [[getattr(row, name) for name in DELIVERY_FIELDS] for row in group],
            "delivery_count": len(group),
        }
        for event_id, group in groups.items()
    ]
    return records, held


def _deliveries_of(rows: list[Any], *, last: bool) -> tuple[list[dict[str, Any]], list[Any]]:
    """The delivery rows of event records."""
    return [
        {
            **dict(zip(DELIVERY_FIELDS, delivery, strict=True)),
            "account_id": row.account_id,
            "created_at": row.created_at,
            "event_id": row.id,
            "event_type": row.event_type,
            "event": row.event,
        }
        for row in rows
        for delivery in row.deliveries
    ], []
