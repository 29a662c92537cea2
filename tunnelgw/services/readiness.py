"""Readiness: the revision the app's database is at (tunnelgw.migrations.migrate)."""

from __future__ import annotations

from tunnelgw.migrations import migrate
from tunnelgw.storage import db


async def stored_revision() -> str | None:
    """The revision the app's database is at (None: never migrated); the database's own
    error when it cannot be reached."""
    async with db.read() as unit:
        return await migrate.stored_revision(unit)
