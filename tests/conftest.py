"""Fixtures: one app and database per test session; each test gets fresh accounts, so tests
are isolated by the same tenant boundary the server enforces.

The engine under test: SQLite by default; `TUNNELGW_TEST_ENGINE=postgresql` starts a
throwaway PostgreSQL cluster for the session (tests/pgcluster.py); or point
TUNNELGW_TEST_DATABASE_URL at an existing empty database.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from tests import pgcluster
from tests.factories import Factory
from tests.openapi_check import SpecValidator
from tunnelgw import migrate
from tunnelgw.app import create_app
from tunnelgw.settings import Settings

MAX_BODY_BYTES = 64 * 1024


@pytest.fixture(scope="session", autouse=True)
def _engine() -> Iterator[None]:
    """Start PostgreSQL for the session when asked; later fixtures read the URL from env."""
    if os.environ.get("TUNNELGW_TEST_ENGINE") != "postgresql" or os.environ.get(
        "TUNNELGW_TEST_DATABASE_URL"
    ):
        yield
        return
    with pgcluster.cluster() as base:
        os.environ["TUNNELGW_TEST_DATABASE_URL"] = pgcluster.create_database(base, "tunnelgw")
        os.environ["TUNNELGW_TEST_PG_BASE"] = base
        try:
            yield
        finally:
            del os.environ["TUNNELGW_TEST_DATABASE_URL"], os.environ["TUNNELGW_TEST_PG_BASE"]


@pytest.fixture(scope="session")
def settings(tmp_path_factory: pytest.TempPathFactory, _engine: None) -> Settings:
    data_dir: Path = tmp_path_factory.mktemp("data")
    return Settings(
        data_dir=data_dir,
        database_url=os.environ.get("TUNNELGW_TEST_DATABASE_URL") or None,
        max_body_bytes=MAX_BODY_BYTES,
        public_url=None,
    )


@pytest.fixture(scope="session")
def spec_validator() -> SpecValidator:
    return SpecValidator()


@pytest.fixture(scope="session")
def http(settings: Settings) -> Iterator[TestClient]:
    migrate.upgrade(settings.resolved_database_url())
    app = create_app(settings)
    with TestClient(app, base_url="http://testserver", raise_server_exceptions=False) as client:
        yield client


@pytest.fixture(scope="session")
def factory(http: TestClient, spec_validator: SpecValidator) -> Factory:
    return Factory(http, spec_validator)


@pytest.fixture
def admin(factory: Factory):  # type: ignore[no-untyped-def]
    """An API client authenticated as the admin of a fresh account."""
    return factory.account()


@pytest.fixture
def other(factory: Factory):  # type: ignore[no-untyped-def]
    """The admin client of a second, unrelated account."""
    return factory.account()
