"""Schema migrations: `upgrade()` brings a database to the newest revision, once, safely.

Concurrent starts do not race: on PostgreSQL the upgrade holds an advisory lock for its
transaction; on SQLite it holds an exclusive lock file next to the database. The server runs
this before its workers start; workers only check (readiness) that the schema is current.
"""

from __future__ import annotations

import contextlib
import fcntl
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import create_engine, text
from sqlalchemy.engine import Connection, make_url

from tunnelgw.db import Query, Unit

if TYPE_CHECKING:
    from alembic.config import Config

LOCK_ID = 0x7475_6E6E  # "tunn": the advisory lock key of tunnelgw migrations
# The newest revision in migrations/versions (a unit test keeps it equal to Alembic's head):
# start-up compares the database with it without importing Alembic.
HEAD = "0006"


def sync_url(url: str) -> str:
    """The same database with a synchronous driver (Alembic runs synchronously)."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        parsed = parsed.set(drivername="sqlite")
    return parsed.render_as_string(hide_password=False)


def _config() -> Config:
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(Path(__file__).parent / "migrations"))
    return config


def head() -> str:
    """The newest revision the code knows."""
    return HEAD


def alembic_head() -> str | None:
    """The head revision as Alembic reads it from the migration scripts."""
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(_config()).get_current_head()


def current(connection: Connection) -> str | None:
    """The revision a database is at (None when never migrated)."""
    from alembic.runtime.migration import MigrationContext

    return MigrationContext.configure(connection).get_current_revision()


_STORED_REVISION = Query(text("SELECT version_num FROM alembic_version"))


async def stored_revision(unit: Unit) -> str | None:
    """The revision a database is at, read through a unit of work (None: never migrated)."""
    try:
        row = (await unit.exec(_STORED_REVISION)).first()
    except Exception as exc:  # no such table (SQLite's and PostgreSQL's own errors)
        if "alembic_version" not in str(exc):
            raise
        return None
    return None if row is None else str(row[0])


@contextlib.contextmanager
def _sqlite_lock(url: str) -> Iterator[None]:
    database = make_url(url).database
    if not database or database == ":memory:":
        yield
        return
    lock_path = Path(database).with_name(Path(database).name + ".migrate.lock")
    with lock_path.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def upgrade(url: str) -> str | None:
    """Migrate the database at `url` to head; returns the revision it is at afterwards. A
    database already at head is only read (Alembic is not even imported)."""

    try:
        if _stored_revision_sync(url) == HEAD:
            return HEAD
    except Exception:  # noqa: S110 - Alembic, below, reports what is wrong with the database
        pass
    return _upgrade(url)


def _stored_revision_sync(url: str) -> str | None:
    """The stored revision, read with the driver directly (no engine, no event loop)."""
    parsed = make_url(url)
    query = "SELECT version_num FROM alembic_version"
    if parsed.get_backend_name() == "sqlite":
        if not parsed.database or not Path(parsed.database).exists():
            return None
        with contextlib.closing(sqlite3.connect(parsed.database)) as conn:
            row = conn.execute(query).fetchone()
    else:
        import psycopg

        conninfo = parsed.set(drivername="postgresql").render_as_string(hide_password=False)
        with psycopg.connect(conninfo) as conn:
            row = conn.execute(query).fetchone()
    return None if row is None else str(row[0])


def _upgrade(url: str) -> str | None:
    from alembic import command

    url = sync_url(url)
    engine = create_engine(url)
    is_sqlite = engine.dialect.name == "sqlite"
    try:
        lock = _sqlite_lock(url) if is_sqlite else contextlib.nullcontext()
        with lock, engine.begin() as connection:
            if engine.dialect.name == "postgresql":
                connection.execute(text("SELECT pg_advisory_xact_lock(:id)"), {"id": LOCK_ID})
            config = _config()
            config.attributes["connection"] = connection
            command.upgrade(config, "head")
            return current(connection)
    finally:
        engine.dispose()
