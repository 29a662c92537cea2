"""Migrations: the migrated schema is exactly the models' schema, upgrades are idempotent,
and concurrent upgrades do not race."""

from __future__ import annotations

import os
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import create_engine
from sqlmodel import SQLModel

import models  # noqa: F401
from tests import pgcluster
from tunnelgw import migrate


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


def test_migrated_schema_equals_the_models(url):
    assert migrate.upgrade(url) == migrate.head()
    engine = create_engine(migrate.sync_url(url))
    with engine.connect() as conn:
        diff = compare_metadata(
            MigrationContext.configure(conn, opts={"compare_type": True}), SQLModel.metadata
        )
    engine.dispose()
    assert diff == [], f"models and migrations differ; add a migration: {diff}"


def test_upgrade_is_idempotent_and_concurrent_upgrades_do_not_race(url):
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda _: migrate.upgrade(url), range(4)))
    assert results == [migrate.head()] * 4
    assert migrate.upgrade(url) == migrate.head()


def test_sync_url_maps_async_drivers():
    assert migrate.sync_url("sqlite+aiosqlite:////x/y.db") == "sqlite:////x/y.db"
    assert migrate.sync_url("postgresql+psycopg://u:p@h/db") == "postgresql+psycopg://u:p@h/db"


def test_the_head_constant_is_alembics_head():
    assert migrate.head() == migrate.alembic_head()


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

    from tunnelgw import ids

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
