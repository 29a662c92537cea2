"""Alembic environment: runs on the connection `tunnelgw.migrations.migrate` hands over (sync
driver), or, for `alembic revision --autogenerate` by developers, on TUNNELGW_DATABASE_URL."""

from __future__ import annotations

from typing import Any, Literal

from alembic import context
from sqlalchemy import create_engine
from sqlalchemy.engine import Connection
from sqlmodel import SQLModel
from sqlmodel.sql.sqltypes import AutoString

from tunnelgw import models
from tunnelgw.core.settings import Settings
from tunnelgw.migrations.migrate import sync_url

models.load_all()  # every table on SQLModel.metadata
target_metadata = SQLModel.metadata


def _render_item(kind: str, obj: Any, _ctx: Any) -> str | Literal[False]:
    """Write SQLModel's AutoString as plain sa.String, so migrations need only SQLAlchemy."""
    if kind == "type" and isinstance(obj, AutoString):
        return f"sa.String(length={obj.length})" if obj.length else "sa.String()"
    return False


def _run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=True,  # SQLite can only ALTER through table copies
        compare_type=True,
        render_item=_render_item,
    )
    with context.begin_transaction():
        context.run_migrations()


connection = context.config.attributes.get("connection")
if connection is not None:
    _run(connection)
else:  # pragma: no cover - developer tooling
    engine = create_engine(sync_url(Settings().resolved_database_url()))
    with engine.connect() as conn:
        _run(conn)
