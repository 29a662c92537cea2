"""event routes kept once (issue 31): an account's routes each get a row of `event_route`
holding the deliveries an event along it makes when none fails, and an event recorded from
this revision on names its route (`event_record.route`) in place of holding them
(`deliveries` NULL). `event_record` is keyed by a number the database gives (`seq`: SQLite's
rowid, a PostgreSQL identity) in place of its text key on `id`, a third b-tree each event's
row was written to; reads go by the account and the id, through its index. The upgrade gives
each account's stored routes their rows; events already recorded keep their deliveries. A
downgrade writes the deliveries of the events that name a route into them

Revision ID: 0024
Revises: 0023
Create Date: 2026-11-30 08:00:00.000000
"""

import hashlib
import json
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op

revision: str = "0024"
down_revision: str | None = "0023"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

ID_TYPE = sa.String(length=64).with_variant(sa.String(length=64, collation="C"), "postgresql")
BATCH = 500
DELIVERED = "delivered"

_meta = sa.MetaData()
sa.Table("account", _meta, sa.Column("id", ID_TYPE, primary_key=True))
_accounts = sa.Table(
    "account",
    sa.MetaData(),
    sa.Column("id", ID_TYPE, primary_key=True),
    sa.Column("event_routes", sa.Text(), nullable=True),
)
_routes = sa.Table(
    "event_route",
    _meta,
    sa.Column(
        "account_id",
        ID_TYPE,
        sa.ForeignKey("account.id", ondelete="CASCADE"),
        primary_key=True,
    ),
    sa.Column("digest", sa.String(length=32), primary_key=True),
    sa.Column("deliveries", sa.JSON(), nullable=False),
    sa.Column("retired_at", sa.DateTime(timezone=True), nullable=True),
)
_records = sa.Table(
    "event_record",
    sa.MetaData(),
    sa.Column("id", ID_TYPE),
    sa.Column("account_id", ID_TYPE),
    sa.Column("deliveries", sa.JSON(none_as_null=True), nullable=True),
    sa.Column("route", sa.String(length=32), nullable=True),
)

# SQLite: the table's columns after its key, as 0021 made them, and its index.
_COLUMNS = """
    id VARCHAR(64) NOT NULL,
    account_id VARCHAR(64) NOT NULL,
    created_at DATETIME NOT NULL,
    event_type VARCHAR(128) NOT NULL,
    event JSON NOT NULL,
    deliveries JSON{},
    delivery_count INTEGER NOT NULL,{}
    FOREIGN KEY(account_id) REFERENCES account (id) ON DELETE CASCADE"""
_NAMES = "id, account_id, created_at, event_type, event, deliveries, delivery_count"
_INDEX = (
    "CREATE INDEX ix_event_record_account_id_id ON event_record (account_id, id, delivery_count)"
)


def digest_of(pairs: list[tuple[str, str]]) -> str:
    """A route's digest, as tunnelgw.models.event_route computes it (as of this revision)."""
    text = "\n".join(f"{subscription} {destination}" for subscription, destination in pairs)
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.drop_constraint("event_record_pkey", "event_record", type_="primary")
        op.execute("ALTER TABLE event_record ADD COLUMN seq BIGSERIAL NOT NULL")
        op.create_primary_key("event_record_pkey", "event_record", ["seq"])
        op.alter_column("event_record", "deliveries", nullable=True)
        op.add_column("event_record", sa.Column("route", sa.String(length=32), nullable=True))
    else:
        columns = _COLUMNS.format("", "\n    route VARCHAR(32),")
        _rebuild_sqlite(f"seq INTEGER NOT NULL PRIMARY KEY,{columns}")
    _routes.create(op.get_bind())
    _give_routes_rows()


def downgrade() -> None:
    _inline_route_deliveries()
    _routes.drop(op.get_bind())
    if op.get_bind().dialect.name == "postgresql":
        op.drop_column("event_record", "route")
        op.alter_column("event_record", "deliveries", nullable=False)
        op.drop_constraint("event_record_pkey", "event_record", type_="primary")
        op.drop_column("event_record", "seq")
        op.create_primary_key("event_record_pkey", "event_record", ["id"])
    else:
        columns = _COLUMNS.format(" NOT NULL", "").lstrip()
        _rebuild_sqlite(f"{columns},\n    PRIMARY KEY (id)")


def _rebuild_sqlite(columns: str) -> None:
    """SQLite changes no table's key in place: the rows go to a new table of `columns`, in id
    order, which then takes the table's name and index."""
    op.execute(f"CREATE TABLE event_record_new ({columns})")
    op.execute(
        f"INSERT INTO event_record_new ({_NAMES}) SELECT {_NAMES} FROM event_record ORDER BY id"  # noqa: S608 - constants
    )
    op.execute("DROP TABLE event_record")
    op.execute("ALTER TABLE event_record_new RENAME TO event_record")
    op.execute(_INDEX)


def _give_routes_rows() -> None:
    """A row for each route of each account's stored routes (`{type: [[subscription,
    destination], ...]}`)."""
    connection = op.get_bind()
    stored = sa.select(_accounts.c.id, _accounts.c.event_routes).where(
        _accounts.c.event_routes.is_not(None)
    )
    for account_id, text in connection.execute(stored).all():
        given: dict[str, list[list[Any]]] = {}
        for pairs in json.loads(text).values():
            pairs = [(pair[0], pair[1]) for pair in pairs]
            given[digest_of(pairs)] = [[s, d, DELIVERED, None] for s, d in pairs]
        rows = [
            {"account_id": account_id, "digest": digest, "deliveries": deliveries}
            for digest, deliveries in given.items()
        ]
        if rows:
            connection.execute(_routes.insert(), rows)


def _inline_route_deliveries() -> None:
    """Each event that names a route holds the route's deliveries."""
    connection = op.get_bind()
    routes = {
        (row.account_id, row.digest): row.deliveries
        for row in connection.execute(sa.select(_routes)).all()
    }
    after: str | None = None
    while True:
        query = (
            sa.select(_records.c.id, _records.c.account_id, _records.c.route)
            .where(_records.c.route.is_not(None))
            .order_by(_records.c.id)
            .limit(BATCH)
        )
        if after is not None:
            query = query.where(_records.c.id > after)
        rows = connection.execute(query).all()
        if not rows:
            break
        after = rows[-1].id
        for row in rows:
            update = _records.update().where(_records.c.id == row.id)
            deliveries = routes.get((row.account_id, row.route), [])
            connection.execute(update.values(deliveries=deliveries, route=None))
