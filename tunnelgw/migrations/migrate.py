"""Schema migrations: `upgrade()` brings a database to the newest revision, once, safely.

Concurrent starts do not race: on PostgreSQL the upgrade holds an advisory lock for its
transaction; on SQLite it holds an exclusive lock file next to the database. The server runs
this before its workers start; workers only check (readiness) that the schema is current.
"""

from __future__ import annotations

import contextlib
import fcntl
import multiprocessing
import os
import sqlite3
import sys
import threading
import traceback
from collections.abc import Iterator
from multiprocessing.connection import Connection as PipeEnd
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import create_engine, inspect, text
from sqlalchemy.engine import Connection, make_url
from sqlmodel import SQLModel

from tunnelgw.migrations import schema
from tunnelgw.storage.connections import PRIVATE_FILE_MODE, private_sqlite_file
from tunnelgw.storage.db import Database, run_with
from tunnelgw.storage.statements import Query
from tunnelgw.storage.unit import Unit

if TYPE_CHECKING:
    from alembic.config import Config

LOCK_ID = 0x7475_6E6E  # "tunn": the advisory lock key of tunnelgw migrations
# The newest revision: the highest of the numbered files in versions/ (`NNNN_slug.py`, named
# by their revision; a unit test keeps it equal to Alembic's head). Start-up compares the
# database with it without importing Alembic.
HEAD = max(
    path.name.partition("_")[0] for path in (Path(__file__).parent / "versions").glob("[0-9]*_*.py")
)


def sync_url(url: str) -> str:
    """The same database with a synchronous driver (Alembic runs synchronously)."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        parsed = parsed.set(drivername="sqlite")
    return parsed.render_as_string(hide_password=False)


def _config() -> Config:
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(Path(__file__).parent))
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


def _sqlite_file(url: str) -> str | None:
    """The file of a SQLite database URL; None for another engine or an in-memory database."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite" or parsed.database in (None, "", ":memory:"):
        return None
    return parsed.database


@contextlib.contextmanager
def _sqlite_lock(database: str | None) -> Iterator[None]:
    """The migration lock of the SQLite file `database` (None: an in-memory database, none)."""
    if database is None:
        yield
        return
    lock_path = Path(database).with_name(Path(database).name + ".migrate.lock")
    private_sqlite_file(database)  # before Alembic's connection makes it
    descriptor = os.open(lock_path, os.O_CREAT | os.O_WRONLY, PRIVATE_FILE_MODE)
    with os.fdopen(descriptor, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def upgrade(url: str, *, isolated: bool = False) -> str | None:
    """Migrate the database at `url` to head; returns the revision it is at afterwards. A
    database already at head is only read (Alembic is not even imported).

    `isolated` (the server's start): a database that needs migrating is migrated by a forked
    child process, so Alembic and what it loads (~13 MiB) never stay resident in the server.
    Only where `fork` exists and the process has no other thread; otherwise here. An empty
    SQLite database needs neither Alembic nor the child: it is built here
    (`_build_empty_sqlite`)."""

    try:
        if _stored_revision_sync(url) == HEAD:
            return HEAD
    except Exception:  # noqa: S110 - Alembic, below, reports what is wrong with the database
        pass
    isolated = isolated and hasattr(os, "fork") and threading.active_count() == 1
    database = _sqlite_file(url)
    if database is not None:
        try:
            if _build_empty_sqlite(database):
                return HEAD
        except Exception as exc:  # reported as the child's failure would be
            if not isolated:
                raise
            raise MigrationError(_failure(exc)) from exc
    return _upgrade_in_child(url) if isolated else _upgrade(url)


class MigrationError(RuntimeError):
    """The server start's migration failed: its error, as the child reported it."""


def _failure(exc: BaseException) -> str:
    return "".join(traceback.format_exception_only(exc)).strip()


def _upgrade_in_child(url: str) -> str | None:
    context = multiprocessing.get_context("fork")
    sys.stdout.flush()  # the child flushes what it inherits when it ends: nothing, then
    sys.stderr.flush()
    reader, writer = context.Pipe(duplex=False)
    child = context.Process(target=_child_upgrade, args=(url, writer), name="tunnelgw-migrate")
    child.start()
    writer.close()
    try:
        failed, result = reader.recv()
    except EOFError:
        failed, result = True, "the migration process ended without an answer"
    finally:
        reader.close()
        child.join()
    if failed:
        raise MigrationError(result)
    revision: str | None = result
    return revision


def _child_upgrade(url: str, writer: PipeEnd) -> None:  # pragma: no cover - the forked child
    try:
        writer.send((False, _upgrade(url)))
    except BaseException as exc:  # reported to the parent, which raises it
        writer.send((True, _failure(exc)))
    finally:
        writer.close()


_VERSION_TABLE = (
    "CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL, "
    "CONSTRAINT alembic_version_pkc PRIMARY KEY (version_num))"
)


def _create_at_head(connection: Connection) -> str:
    """An empty database built at the newest revision in one step: the models' tables
    (`create_all`), then the revision stamped as Alembic stamps it (its `alembic_version`
    table, written here so Alembic need not be imported). This is Alembic's own recipe for a
    new database ("Building an Up to Date Database from Scratch" in its cookbook): the
    revisions replay the schema's history, which an empty database does not have, and cost
    most of a first start. tests/unit/test_migrations.py checks that both ways build the same
    schema, and that Alembic reads the stamp and migrates on from it."""
    from tunnelgw import models

    models.load_all()  # every table on the metadata
    if connection.dialect.name == "sqlite":
        # Python's sqlite3 begins no transaction for DDL: each CREATE would commit on its own
        # (a journal sync each, ~100 of them), and a crash would leave half a schema.
        connection.exec_driver_sql("BEGIN")
    SQLModel.metadata.create_all(connection)
    connection.execute(text(_VERSION_TABLE))
    connection.execute(text(_STAMP), {"v": HEAD})
    return HEAD


_STAMP = "INSERT INTO alembic_version (version_num) VALUES (:v)"


def _build_empty_sqlite(database: str) -> bool:
    """`_create_at_head` for the SQLite file `database`, through `sqlite3` itself:
    the same statements in one transaction, under the migration lock; False (nothing done)
    when the database has tables already. Without SQLAlchemy's engine, its inspection of the
    empty database and its execution of each statement, a first start's build takes ~22 ms
    instead of ~32 (bench/README.md, issue 31, twelfth round)."""
    with _sqlite_lock(database), contextlib.closing(sqlite3.connect(database)) as conn:
        conn.isolation_level = None  # the transaction below is the only one
        conn.execute("BEGIN IMMEDIATE")
        try:
            empty = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table'").fetchone()
            if empty is None:
                for statement in (*schema.stored(), _VERSION_TABLE):
                    conn.execute(statement)
                conn.execute(_STAMP, {"v": HEAD})
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT" if empty is None else "ROLLBACK")
    return empty is None


def _stored_revision_sync(url: str) -> str | None:
    """The stored revision, read without Alembic: with `sqlite3` directly, or through a unit
    of work on PostgreSQL (the serving driver: the migrations' own driver stays out of the
    server process)."""
    if make_url(url).get_backend_name() == "sqlite":
        database = _sqlite_file(url)
        if database is None or not Path(database).exists():
            return None
        with contextlib.closing(sqlite3.connect(database)) as conn:
            row = conn.execute("SELECT version_num FROM alembic_version").fetchone()
        return None if row is None else str(row[0])

    async def read(database: Database) -> str | None:
        async with database.read() as unit:
            return await stored_revision(unit)

    return run_with(url, read)


def _upgrade(url: str) -> str | None:
    """Migrate to head: an empty database built at head, any other through Alembic."""
    url = sync_url(url)
    engine = create_engine(url)
    try:
        with _sqlite_lock(_sqlite_file(url)), engine.begin() as connection:
            if engine.dialect.name == "postgresql":
                connection.execute(text("SELECT pg_advisory_xact_lock(:id)"), {"id": LOCK_ID})
            if not inspect(connection).get_table_names():
                return _create_at_head(connection)
            from alembic import command

            config = _config()
            config.attributes["connection"] = connection
            command.upgrade(config, "head")
            return current(connection)
    finally:
        engine.dispose()
