"""Migrations: the migrated schema is exactly the models' schema, upgrades are idempotent,
and concurrent upgrades do not race."""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import subprocess
import sys
import textwrap
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import create_engine
from sqlmodel import SQLModel

from tests import pgcluster
from tests.factories import x509_certificate
from tunnelgw import models
from tunnelgw.migrations import migrate, schema

models.load_all()  # every table on the metadata

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def url(settings, tmp_path):
    """A fresh, empty database of the engine under test (PostgreSQL when the suite runs on
    it; an existing TUNNELGW_TEST_DATABASE_URL without a cluster of ours is reused)."""
    if os.environ.get("TUNNELGW_TEST_PG_BASE"):
        name = f"migrate_{uuid.uuid4().hex[:12]}"
        return pgcluster.create_database(os.environ["TUNNELGW_TEST_PG_BASE"], name)
    if os.environ.get("TUNNELGW_TEST_DATABASE_URL"):
        return migrate.sync_url(settings.resolved_database_url())
    return f"sqlite:///{tmp_path / 'm.db'}"


@pytest.fixture
def other_url(settings, tmp_path):
    """A second fresh database of the engine under test."""
    if os.environ.get("TUNNELGW_TEST_PG_BASE"):
        name = f"migrate_{uuid.uuid4().hex[:12]}"
        return pgcluster.create_database(os.environ["TUNNELGW_TEST_PG_BASE"], name)
    if os.environ.get("TUNNELGW_TEST_DATABASE_URL"):
        pytest.skip("one database was given (TUNNELGW_TEST_DATABASE_URL), not a cluster")
    return f"sqlite:///{tmp_path / 'other.db'}"


def _replay(url: str, revision: str = "head") -> None:
    """Every revision in turn up to `revision`, as an existing database is migrated
    (`upgrade` builds an empty one from the models in one step instead)."""
    engine = create_engine(migrate.sync_url(url))
    with engine.begin() as connection:
        config = migrate._config()
        config.attributes["connection"] = connection
        command.upgrade(config, revision)
    engine.dispose()


def _structure(url: str) -> dict[str, object]:
    """Each table's columns (type, nullability, default), keys, indexes and constraints, as
    the database itself describes them."""
    engine = create_engine(migrate.sync_url(url))
    found: dict[str, object] = {}
    with engine.connect() as conn:
        inspector = sa.inspect(conn)
        for table in inspector.get_table_names():
            found[table] = {
                # By name: a revision that adds a column puts it last; nothing reads by position.
                "columns": sorted(
                    (c["name"], str(c["type"]), c["nullable"], str(c.get("default")))
                    for c in inspector.get_columns(table)
                ),
                "primary key": inspector.get_pk_constraint(table)["constrained_columns"],
                "foreign keys": sorted(
                    (tuple(f["constrained_columns"]), f["referred_table"], str(f["options"]))
                    for f in inspector.get_foreign_keys(table)
                ),
                "indexes": sorted(
                    (i["name"], tuple(i["column_names"]), i["unique"])
                    for i in inspector.get_indexes(table)
                ),
                "unique": sorted(
                    (u["name"] or "", tuple(u["column_names"]))
                    for u in inspector.get_unique_constraints(table)
                ),
                "checks": sorted(c["sqltext"] for c in inspector.get_check_constraints(table)),
            }
    engine.dispose()
    return found


def test_migrated_schema_equals_the_models(url):
    _replay(url)
    engine = create_engine(migrate.sync_url(url))
    with engine.connect() as conn:
        diff = compare_metadata(
            MigrationContext.configure(conn, opts={"compare_type": True}), SQLModel.metadata
        )
    engine.dispose()
    assert diff == [], f"models and migrations differ; add a migration: {diff}"
    assert migrate.upgrade(url) == migrate.head()  # replayed to head: nothing left to do


def test_a_new_database_is_built_from_the_models_as_the_revisions_build_it(url, other_url):
    """`upgrade` builds an empty database from the models in one step: the same tables,
    columns, defaults, keys, indexes and constraints as replaying every revision; and
    Alembic reads its stamp and migrates on from it (down one revision and up again)."""
    assert migrate.upgrade(url) == migrate.head()
    _replay(other_url)
    built, replayed = _structure(url), _structure(other_url)
    assert built.keys() == replayed.keys()
    for table in built:
        assert built[table] == replayed[table], table
    engine = create_engine(migrate.sync_url(url))
    with engine.begin() as connection:
        assert migrate.current(connection) == migrate.head()
        config = migrate._config()
        config.attributes["connection"] = connection
        command.downgrade(config, "-1")
        assert migrate.current(connection) != migrate.head()
        command.upgrade(config, "head")
        assert migrate.current(connection) == migrate.head()
    engine.dispose()


def test_upgrade_is_idempotent_and_concurrent_upgrades_do_not_race(url):
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda _: migrate.upgrade(url), range(4)))
    assert results == [migrate.head()] * 4
    assert migrate.upgrade(url) == migrate.head()


def test_the_schema_file_is_what_the_models_give():
    """A new SQLite database is built from schema.sql (a server need not import every model
    to start): it must hold what the models give, statement for statement."""
    assert schema.stored() == schema.generated(), (
        "tunnelgw/migrations/schema.sql differs from the models: write it again with "
        "`python -m tunnelgw.migrations.schema` (and add a migration if you have not)"
    )
    assert schema.render(schema.stored()) == schema.FILE.read_text(encoding="utf-8")


def test_a_new_sqlite_database_that_fails_to_build_is_left_empty(tmp_path, monkeypatch):
    """The SQLite build is one transaction: a statement that fails halfway leaves no table
    behind, and the next start builds the whole schema."""
    url = f"sqlite:///{tmp_path / 'new.db'}"
    ddl = schema.stored()
    broken = [*ddl[:10], "CREATE TABLE broken (", *ddl[10:]]
    monkeypatch.setattr(schema, "stored", lambda: broken)
    with pytest.raises(sqlite3.OperationalError):
        migrate.upgrade(url)
    with contextlib.closing(sqlite3.connect(tmp_path / "new.db")) as conn:
        assert conn.execute("SELECT name FROM sqlite_master").fetchall() == []
    monkeypatch.undo()
    assert migrate.upgrade(url) == migrate.head()
    with contextlib.closing(sqlite3.connect(tmp_path / "new.db")) as conn:
        tables = {name for (name,) in conn.execute("SELECT name FROM sqlite_master")}
    assert tables >= set(SQLModel.metadata.tables) | {"alembic_version"}


ISOLATED_UPGRADE = """
import sys
import textwrap
from tunnelgw.migrations import migrate
in_child = migrate._upgrade_in_child
migrate._upgrade_in_child = lambda url: print("forked") or in_child(url)
try:
    print(migrate.upgrade(sys.argv[1], isolated=True))
except migrate.MigrationError as exc:
    print("MigrationError:", exc)
print("alembic loaded" if "alembic" in sys.modules else "alembic not loaded")
"""


def _isolated_upgrade(url: str) -> list[str]:
    """`upgrade(url, isolated=True)` in a fresh, single-threaded interpreter (this one runs
    threads, and a forked migration needs none): what it printed."""
    done = subprocess.run(
        [sys.executable, "-c", ISOLATED_UPGRADE, url],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return done.stdout.splitlines()


def test_the_server_start_builds_a_new_database_and_keeps_alembic_out(url):
    """A new database is built at head without Alembic: on SQLite in the process itself, on
    PostgreSQL in a forked child (its migration driver stays out of the server)."""
    forked = ["forked"] if url.startswith("postgresql") else []
    assert _isolated_upgrade(url) == [*forked, migrate.head(), "alembic not loaded"]
    assert migrate.upgrade(url) == migrate.head()  # really at head, for this process too


def test_the_server_start_migrates_an_older_database_in_a_child(url):
    _replay(url, "0019")
    assert _isolated_upgrade(url) == ["forked", migrate.head(), "alembic not loaded"]
    assert migrate.upgrade(url) == migrate.head()


def test_a_failed_migration_in_the_child_is_reported(tmp_path):
    (tmp_path / "blocked").write_text("a file where the database's folder should be")
    printed = _isolated_upgrade(f"sqlite:///{tmp_path / 'blocked' / 'm.db'}")
    assert printed[0].startswith("MigrationError: ")
    assert "Not a directory" in printed[0]
    assert printed[1] == "alembic not loaded"


def test_sync_url_maps_async_drivers():
    assert migrate.sync_url("sqlite+aiosqlite:////x/y.db") == "sqlite:////x/y.db"
    assert migrate.sync_url("postgresql+psycopg://u:p@h/db") == "postgresql+psycopg://u:p@h/db"


def test_the_head_constant_is_alembics_head():
    assert migrate.head() == migrate.alembic_head()


# Revision 0004 carries the rows of older databases over (fixture rows: the resources it
# turns into API resources could only be written by fixture files before).

NOW = datetime(2026, 6, 1, tzinfo=UTC)


def _to(url: str, revision: str) -> None:
    engine = create_engine(migrate.sync_url(url))
    try:
        with engine.begin() as connection:
            if migrate.current(connection) is not None:
                pytest.skip("needs a fresh database (an existing TUNNELGW_TEST_DATABASE_URL)")
            config = migrate._config()
            config.attributes["connection"] = connection
            command.upgrade(config, revision)
    finally:
        engine.dispose()


def _table(name: str, *columns: str) -> sa.TableClause:
    types = {
        "created_at": sa.DateTime(timezone=True),
        "not_after": sa.DateTime(timezone=True),
        "port": sa.Integer(),
    }
    return sa.table(name, *(sa.column(c, types.get(c, sa.String())) for c in columns))


def _insert(url: str, rows: list[tuple[sa.TableClause, dict[str, object]]]) -> None:
    engine = create_engine(migrate.sync_url(url))
    try:
        with engine.begin() as connection:
            for table, values in rows:
                connection.execute(table.insert().values(**values))
    finally:
        engine.dispose()


def _described(account: str, id_: str) -> dict[str, object]:
    return {"id": id_, "account_id": account, "created_at": NOW, "description": "", "metadata": ""}


def _legacy_rows(account: str, pem: str) -> list[tuple[sa.TableClause, dict[str, object]]]:
    described = ("id", "account_id", "created_at", "description", "metadata")
    return [
        (
            _table("account", "id", "name", "created_at"),
            {"id": account, "name": "", "created_at": NOW},
        ),
        (_table("tunnel", *described), _described(account, "tn_1")),
        (
            _table("tls_certificate", *described, "certificate_pem", "issued_for_id", "not_after"),
            {**_described(account, "cert_pem"), "certificate_pem": pem, "not_after": NOW},
        ),
        (
            _table("tls_certificate", *described, "certificate_pem", "issued_for_id"),
            {**_described(account, "cert_issued"), "certificate_pem": pem, "issued_for_id": "rd_1"},
        ),
        (
            _table("tls_certificate", *described, "certificate_pem"),
            {**_described(account, "cert_none"), "certificate_pem": ""},
        ),
        (
            _table("reserved_domain", *described, "domain", "region", "certificate_id"),
            {
                **_described(account, "rd_1"),
                "domain": f"{account}.test",
                "region": "us",
                "certificate_id": "cert_none",
            },
        ),
        (
            _table("reserved_addr", *described, "addr", "region"),
            {**_described(account, "ra_1"), "addr": "1.TCP.example.test:20001", "region": "eu"},
        ),
        (
            _table("edge_route", *described, "edge_id", "match"),
            {**_described(account, "edghtsrt_1"), "edge_id": "edghts_1", "match": "/"},
        ),
    ]


def test_0004_carries_older_rows_over(url):
    _to(url, "0003")
    pem = x509_certificate(ca=False, common_names=("legacy.example.com",))
    account = f"acct_{uuid.uuid4().hex[:12]}"
    _insert(url, _legacy_rows(account, pem))
    assert migrate.upgrade(url) == migrate.head()

    engine = create_engine(migrate.sync_url(url))
    try:
        with engine.connect() as conn:
            certs = {
                row.id: row
                for row in conn.execute(
                    sa.text(
                        "SELECT id, subject_common_name, private_key_type, issued_at, "
                        "not_before, subject_alternative_names FROM tls_certificate "
                        "WHERE account_id = :a"
                    ),
                    {"a": account},
                )
            }
            domain = conn.execute(
                sa.text("SELECT certificate_id FROM reserved_domain WHERE id = 'rd_1'")
            ).one()
            addr = conn.execute(
                sa.text("SELECT host, port FROM reserved_addr WHERE id = 'ra_1'")
            ).one()
            tunnel = conn.execute(
                sa.text("SELECT proto, region, public_url, labels FROM tunnel WHERE id = 'tn_1'")
            ).one()
            route = conn.execute(
                sa.text("SELECT match_type FROM edge_route WHERE id = 'edghtsrt_1'")
            ).one()
    finally:
        engine.dispose()
    assert set(certs) == {"cert_pem", "cert_issued"}  # the record without a certificate went
    assert domain.certificate_id is None  # ... and the domain no longer names it
    for row in certs.values():
        assert (row.subject_common_name, row.private_key_type) == ("legacy.example.com", "ecdsa")
        names = row.subject_alternative_names
        assert (json.loads(names) if isinstance(names, str) else names) == {
            "dns_names": [],
            "ips": [],
        }
    assert certs["cert_pem"].issued_at is None
    assert certs["cert_issued"].issued_at is not None
    assert (addr.host, addr.port) == ("1.tcp.example.test", 20001)
    assert (tunnel.proto, tunnel.region, tunnel.public_url) == ("https", "us", "")
    assert route.match_type == "path_prefix"


def test_0004_stops_on_an_address_held_twice(url):
    _to(url, "0003")
    account = f"acct_{uuid.uuid4().hex[:12]}"
    described = ("id", "account_id", "created_at", "description", "metadata")
    addrs = _table("reserved_addr", *described, "addr", "region")
    _insert(
        url,
        [
            (
                _table("account", "id", "name", "created_at"),
                {"id": account, "name": "", "created_at": NOW},
            ),
            (addrs, {**_described(account, "ra_a"), "addr": "x.test:1", "region": "us"}),
            (addrs, {**_described(account, "ra_b"), "addr": "X.test:1", "region": "us"}),
        ],
    )
    with pytest.raises(RuntimeError, match=r"x\.test:1.*ra_a.*ra_b"):
        migrate.upgrade(url)
    engine = create_engine(migrate.sync_url(url))
    try:
        with engine.connect() as conn:
            assert migrate.current(conn) == "0003"  # nothing of 0004 stayed
    finally:
        engine.dispose()


def test_0004_downgrades_and_upgrades_again(url):
    _to(url, "head")
    account = f"acct_{uuid.uuid4().hex[:12]}"
    described = ("id", "account_id", "created_at", "description", "metadata")
    _insert(
        url,
        [
            (
                _table("account", "id", "name", "created_at"),
                {"id": account, "name": "", "created_at": NOW},
            ),
            (
                _table("reserved_addr", *described, "host", "port", "region"),
                {
                    **_described(account, "ra_1"),
                    "host": "us.tcp.x.test",
                    "port": 20001,
                    "region": "us",
                },
            ),
        ],
    )
    engine = create_engine(migrate.sync_url(url))
    try:
        with engine.begin() as connection:
            config = migrate._config()
            config.attributes["connection"] = connection
            command.downgrade(config, "0003")
        with engine.connect() as conn:
            assert migrate.current(conn) == "0003"
            addr = conn.execute(sa.text("SELECT addr FROM reserved_addr WHERE id = 'ra_1'")).one()
            assert addr.addr == "us.tcp.x.test:20001"
    finally:
        engine.dispose()
    assert migrate.upgrade(url) == migrate.head()
    test_migrated_schema_equals_the_models(url)


def _alembic(url: str, action: str, target: str) -> None:
    from alembic import command

    engine = create_engine(migrate.sync_url(url))
    try:
        with engine.begin() as connection:
            config = migrate._config()
            config.attributes["connection"] = connection
            getattr(command, action)(config, target)
    finally:
        engine.dispose()


def test_client_compatibility_revision_fills_existing_rows_and_goes_back(url):
    """0005 (issue 10) gives existing rows the defaults, and downgrades cleanly."""
    from sqlalchemy import text

    from tunnelgw.core import ids

    down = "0005@-1"  # the revision before 0005, whatever it is chained to
    _alembic(url, "upgrade", "0005")
    _alembic(url, "downgrade", down)
    engine = create_engine(migrate.sync_url(url))
    account, rd, ep = ids.new_id("acct"), ids.new_id("rd"), ids.new_id("ep")
    with engine.begin() as conn:
        conn.execute(
            text("INSERT INTO account (id, name, created_at) VALUES (:a, '', CURRENT_TIMESTAMP)"),
            {"a": account},
        )
        conn.execute(
            text(
                "INSERT INTO reserved_domain (id, account_id, created_at, description, metadata,"
                " domain, region) VALUES (:id, :a, CURRENT_TIMESTAMP, '', '', :d, 'us')"
            ),
            {"id": rd, "a": account, "d": f"{rd.lower()}.example.com"},
        )
        conn.execute(
            text(
                "INSERT INTO endpoint (id, account_id, created_at, updated_at, region, proto,"
                " hostport, public_url, type, metadata) VALUES (:id, :a, CURRENT_TIMESTAMP,"
                " CURRENT_TIMESTAMP, 'us', 'https', 'a.example.com:443',"
                " 'https://a.example.com', 'ephemeral', '')"
            ),
            {"id": ep, "a": account},
        )
    engine.dispose()
    _alembic(url, "upgrade", "head")
    engine = create_engine(migrate.sync_url(url))
    with engine.connect() as conn:
        resolves = conn.execute(
            text("SELECT resolves_to FROM reserved_domain WHERE id = :id"), {"id": rd}
        )
        endpoint = conn.execute(
            text(
                "SELECT bindings, pooling_enabled, name, traffic_policy FROM endpoint"
                " WHERE id = :id"
            ),
            {"id": ep},
        ).one()
        assert str(resolves.scalar()).replace(" ", "") == "[]"
        assert str(endpoint[0]).replace(" ", "").replace("'", '"') in ('["public"]',)
        assert not endpoint[1]
        assert (endpoint[2], endpoint[3]) == ("", "")
    engine.dispose()


def test_0008_makes_existing_principals_active_and_goes_back(url):
    """0008 (issue 20): principals of older databases are active (their keys keep working);
    the credential tables go on a downgrade and come back on the next upgrade."""
    from sqlalchemy import text

    from tunnelgw.core import ids

    _alembic(url, "upgrade", "0007")
    account, user = ids.new_id("acct"), ids.new_id("usr")
    engine = create_engine(migrate.sync_url(url))
    with engine.begin() as conn:
        conn.execute(
            text("INSERT INTO account (id, name, created_at) VALUES (:a, '', CURRENT_TIMESTAMP)"),
            {"a": account},
        )
        conn.execute(
            text(
                "INSERT INTO principal (id, account_id, kind, name, is_admin, created_at)"
                " VALUES (:id, :a, 'user', 'admin', :admin, CURRENT_TIMESTAMP)"
            ),
            {"id": user, "a": account, "admin": True},
        )
    engine.dispose()
    _alembic(url, "upgrade", "head")
    _alembic(url, "downgrade", "0007")
    _alembic(url, "upgrade", "head")
    engine = create_engine(migrate.sync_url(url))
    with engine.connect() as conn:
        active = conn.execute(text("SELECT active FROM principal WHERE id = :id"), {"id": user})
        assert active.scalar() in (True, 1)
        assert conn.execute(text("SELECT count(*) FROM credential")).scalar() == 0
    engine.dispose()


def test_the_server_process_keeps_the_migration_stack_out(url):
    """`tunnelgw serve` builds a new database without Alembic and then serves through the
    serving driver: neither Alembic nor psycopg (Alembic's PostgreSQL driver, ~9 MiB with
    its bundled libpq) is ever loaded in the server process, on either engine."""
    code = textwrap.dedent(
        f"""
        import sys
        from tunnelgw.storage import db
        from tunnelgw.migrations import migrate

        assert migrate.upgrade({url!r}, isolated=True) == migrate.HEAD  # built, without Alembic
        assert migrate.upgrade({url!r}, isolated=True) == migrate.HEAD  # read: at head

        async def read(database):
            async with database.read() as unit:
                return await migrate.stored_revision(unit)

        assert db.run_with({url!r}, read) == migrate.HEAD
        print(",".join(m for m in ("alembic", "psycopg") if m in sys.modules))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ""
