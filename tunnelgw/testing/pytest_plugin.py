"""The tunnelgw pytest plugin (entry point `pytest11`, loaded without an import):

- `tunnelgw_server` (session): one `TunnelgwServer` for the test session (per xdist worker),
  started at first use, stopped at the session's end.
- `tunnelgw` (function): that same server, with its account reset first (resources, fault
  rules and simulated clock) and the `--tunnelgw-fixture` file loaded again after the reset.
- `tunnelgw_settings` (session): the server's settings as keyword arguments, from
  `--tunnelgw-setting NAME=VALUE` / the `tunnelgw_settings` ini lines; override it in a
  conftest.py to choose them in code.

Options: `--tunnelgw-database-url URL` (default: SQLite in a temporary directory),
`--tunnelgw-fixture FILE`, `--tunnelgw-setting NAME=VALUE` (repeatable), `--tunnelgw-profile
platform` (the platform's error codes, statuses and messages, and its version header; the
setting `profile`); ini keys `tunnelgw_database_url`, `tunnelgw_fixture` (relative to the ini
file), `tunnelgw_profile` and `tunnelgw_settings` (one NAME=VALUE per line).

A failing test that used `tunnelgw` or `tunnelgw_server` gets the server's log lines written
during it in its report ("tunnelgw server log"; access lines reach the log within 0.25 s).

Nothing heavy is imported here; the server code loads when a fixture is first used.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from tunnelgw.testing.server import TunnelgwServer

REPORT_LOG_CHARS = 8000
_LOG_START = pytest.StashKey[int]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("tunnelgw", "tunnelgw test server (fixtures tunnelgw, tunnelgw_server)")
    group.addoption(
        "--tunnelgw-database-url",
        metavar="URL",
        help="database for the test server; it gets a fresh account (default: SQLite in a "
        "temporary directory)",
    )
    group.addoption(
        "--tunnelgw-fixture",
        metavar="FILE",
        help="fixture file loaded at start and again after each reset by the tunnelgw fixture",
    )
    group.addoption(
        "--tunnelgw-setting",
        metavar="NAME=VALUE",
        action="append",
        default=[],
        help="a server setting (tunnelgw.core.settings.Settings), e.g. "
        "certificate_issue_delay_seconds=0; repeatable",
    )
    group.addoption(
        "--tunnelgw-profile",
        choices=("tunnelgw", "platform"),
        help="platform: the server answers errors with the platform's codes, statuses and "
        "messages and accepts its version header (default tunnelgw)",
    )
    parser.addini("tunnelgw_database_url", "database URL for the tunnelgw test server")
    parser.addini("tunnelgw_profile", "tunnelgw or platform (see --tunnelgw-profile)")
    parser.addini(
        "tunnelgw_fixture", "fixture file for the tunnelgw test server (relative to the ini file)"
    )
    parser.addini("tunnelgw_settings", "tunnelgw server settings, NAME=VALUE per line",
                  type="linelist")  # fmt: skip


def _database_url(config: pytest.Config) -> str | None:
    value: str | None = config.getoption("tunnelgw_database_url") or config.getini(
        "tunnelgw_database_url"
    )
    return value or None


def _fixture(config: pytest.Config) -> Path | None:
    given: str | None = config.getoption("tunnelgw_fixture")
    if given:
        return Path(given).resolve()  # command line: relative to the working directory
    ini: str = config.getini("tunnelgw_fixture")
    if not ini:
        return None
    base = config.inipath.parent if config.inipath else config.rootpath
    return (base / ini).resolve()


def _settings(config: pytest.Config) -> dict[str, str]:
    lines: list[str] = [*config.getini("tunnelgw_settings"), *config.getoption("tunnelgw_setting")]
    settings: dict[str, str] = {}
    for line in lines:
        name, sep, value = line.partition("=")
        if not sep or not name.strip():
            raise pytest.UsageError(f"tunnelgw setting {line!r}: expected NAME=VALUE")
        settings[name.strip().lower()] = value.strip()
    profile: str = config.getoption("tunnelgw_profile") or config.getini("tunnelgw_profile")
    if profile:
        settings["profile"] = profile
    return settings


@pytest.fixture(scope="session")
def tunnelgw_settings(pytestconfig: pytest.Config) -> dict[str, Any]:
    """Keyword arguments (server settings) for the session's TunnelgwServer."""
    return dict(_settings(pytestconfig))


@pytest.fixture(scope="session")
def tunnelgw_server(
    pytestconfig: pytest.Config, tunnelgw_settings: dict[str, Any]
) -> Iterator[TunnelgwServer]:
    """One tunnelgw server for the session (its state is shared: see `tunnelgw`)."""
    from tunnelgw.testing.server import TunnelgwServer

    with TunnelgwServer(
        database_url=_database_url(pytestconfig),
        fixture=_fixture(pytestconfig),
        **tunnelgw_settings,
    ) as server:
        yield server


@pytest.fixture
def tunnelgw(pytestconfig: pytest.Config, tunnelgw_server: TunnelgwServer) -> TunnelgwServer:
    """The session's server with a fresh state: its account emptied, fault rules cleared,
    clock reset, and the `--tunnelgw-fixture` file loaded again."""
    tunnelgw_server.reset()
    fixture = _fixture(pytestconfig)
    if fixture is not None:
        tunnelgw_server.load(fixture)
    return tunnelgw_server


def _server_of(item: pytest.Item) -> TunnelgwServer | None:
    funcargs: dict[str, Any] = getattr(item, "funcargs", {})
    server: TunnelgwServer | None = funcargs.get("tunnelgw") or funcargs.get("tunnelgw_server")
    return server


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    server = _server_of(item)
    if server is not None:
        item.stash[_LOG_START] = server.log_position()
    return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    start = item.stash.get(_LOG_START, None)
    server = _server_of(item)
    if report.when == "call" and report.failed and start is not None and server is not None:
        text = server.log_text(since=start)
        if len(text) > REPORT_LOG_CHARS:
            text = "[...]\n" + text[-REPORT_LOG_CHARS:]
        report.sections.append(("tunnelgw server log", text or "(nothing written)"))
    return report
