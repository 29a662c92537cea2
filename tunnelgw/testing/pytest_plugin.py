"""The tunnelgw pytest plugin (entry point `pytest11`, loaded without an import):

- `tunnelgw_server` (session): one `TunnelgwServer` for the test session (per xdist worker),
  started at first use, stopped at the session's end.
- `tunnelgw` (function): that same server, with its account reset first (resources, fault
  rules and simulated clock) and the `--tunnelgw-fixture` file loaded again after the reset.
- `tunnelgw_settings` (session): the server's settings as keyword arguments, from
  `--tunnelgw-setting NAME=VALUE` / the `tunnelgw_settings` ini lines; override it in a
  conftest.py to choose them in code.
- `account` (function): a fresh account of its own on the session's server (made with the
  server's operator token, the `--tunnelgw-fixture` file loaded into it), dropped with
  everything in it after the test: a `TunnelgwAccount` (`token`, `client()`, `reset()`, ...).
- `worker_account` (session): one such account for the whole session, i.e. per xdist worker.
- `tunnelgw_operator` (session): the `TunnelgwOperator` those accounts come from.

Options: `--tunnelgw-database-url URL` (default: SQLite in a temporary directory),
`--tunnelgw-fixture FILE`, `--tunnelgw-setting NAME=VALUE` (repeatable), `--tunnelgw-profile
platform` (the platform's error codes, statuses and messages, and its version header; the
setting `profile`); ini keys `tunnelgw_database_url`, `tunnelgw_fixture` (relative to the ini
file), `tunnelgw_profile` and `tunnelgw_settings` (one NAME=VALUE per line).

One server for many: `--tunnelgw-url URL` (ini `tunnelgw_url`) uses a running server (a CI
service container) with the operator token in the environment (`TUNNELGW_OPERATOR_TOKEN`)
instead of starting one: `account`, `worker_account` and `tunnelgw` (on the worker's
account) work on it, `tunnelgw_server` is refused. `--tunnelgw-shared` (ini
`tunnelgw_shared = true`) with pytest-xdist: the controller starts one server for all the
workers and hands them its address and operator token.

A failing test that used `tunnelgw` or `tunnelgw_server` gets the server's log lines written
during it in its report ("tunnelgw server log"; access lines reach the log within 0.25 s).

Nothing heavy is imported here; the server code loads when a fixture is first used.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from tunnelgw.testing.accounts import TunnelgwAccount, TunnelgwOperator
    from tunnelgw.testing.server import TunnelgwServer

REPORT_LOG_CHARS = 8000
MAX_ACCOUNT_NAME = 255
OPERATOR_TOKEN_VARIABLE = "TUNNELGW_OPERATOR_TOKEN"  # noqa: S105 - a name, not a secret
_LOG_START = pytest.StashKey[int]()
_SHARED = pytest.StashKey["TunnelgwServer"]()


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
    group.addoption(
        "--tunnelgw-url",
        metavar="URL",
        help="use the tunnelgw server running at URL (its operator token in "
        "TUNNELGW_OPERATOR_TOKEN) instead of starting one",
    )
    group.addoption(
        "--tunnelgw-shared",
        action="store_true",
        default=None,
        help="with pytest-xdist: one server for all workers, started by the controller",
    )
    parser.addini("tunnelgw_url", "URL of a running tunnelgw server to use instead of one")
    parser.addini("tunnelgw_shared", "one tunnelgw server for all xdist workers", type="bool")
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


def _remote(config: pytest.Config) -> tuple[str, str] | None:
    """(URL, operator token) of a server started elsewhere: `--tunnelgw-url` / `tunnelgw_url`
    with TUNNELGW_OPERATOR_TOKEN, or what the xdist controller handed this worker."""
    handed: dict[str, Any] = getattr(config, "workerinput", {})
    if handed.get("tunnelgw_url"):
        return handed["tunnelgw_url"], handed["tunnelgw_operator_token"]
    url: str | None = config.getoption("tunnelgw_url") or config.getini("tunnelgw_url") or None
    if url is None:
        return None
    token = os.environ.get(OPERATOR_TOKEN_VARIABLE)
    if not token:
        raise pytest.UsageError(
            f"--tunnelgw-url {url}: set {OPERATOR_TOKEN_VARIABLE} to the server's operator token"
        )
    return url, token


def _shared(config: pytest.Config) -> bool:
    """Whether this is the xdist controller of a run with `--tunnelgw-shared`."""
    option: bool | None = config.getoption("tunnelgw_shared")
    wanted = option if option is not None else bool(config.getini("tunnelgw_shared"))
    controller = not hasattr(config, "workerinput") and bool(
        config.pluginmanager.hasplugin("xdist") and config.getoption("numprocesses", None)
    )
    return wanted and controller and _remote(config) is None


class _SharedServer:
    """The xdist controller's part of `--tunnelgw-shared`: the server's address and operator
    token for each worker (an xdist hook, so registered only when xdist runs)."""

    def __init__(self, server: TunnelgwServer) -> None:
        self.server = server

    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput["tunnelgw_url"] = self.server.base_url
        node.workerinput["tunnelgw_operator_token"] = self.server.operator_token


def pytest_configure(config: pytest.Config) -> None:
    if not _shared(config):
        return
    from tunnelgw.testing.server import TunnelgwServer

    settings: dict[str, Any] = dict(_settings(config))
    server = TunnelgwServer(database_url=_database_url(config), **settings)
    server.start()
    config.stash[_SHARED] = server
    config.pluginmanager.register(_SharedServer(server), "tunnelgw-shared-server")


def pytest_unconfigure(config: pytest.Config) -> None:
    server = config.stash.get(_SHARED, None)
    if server is not None:
        server.stop()


@pytest.fixture(scope="session")
def tunnelgw_server(
    pytestconfig: pytest.Config, tunnelgw_settings: dict[str, Any]
) -> Iterator[TunnelgwServer]:
    """One tunnelgw server for the session (its state is shared: see `tunnelgw`)."""
    from tunnelgw.testing.server import TunnelgwServer

    if _remote(pytestconfig) is not None:
        raise pytest.UsageError(
            "tunnelgw_server starts a server of its own; with --tunnelgw-url or "
            "--tunnelgw-shared use the fixtures account, worker_account or tunnelgw"
        )
    with TunnelgwServer(
        database_url=_database_url(pytestconfig),
        fixture=_fixture(pytestconfig),
        **tunnelgw_settings,
    ) as server:
        yield server


@pytest.fixture(scope="session")
def tunnelgw_operator(
    request: pytest.FixtureRequest, pytestconfig: pytest.Config
) -> Iterator[TunnelgwOperator]:
    """The operator of the session's server (or of the `--tunnelgw-url` one): makes, lists
    and drops accounts."""
    remote = _remote(pytestconfig)
    if remote is None:
        server: TunnelgwServer = request.getfixturevalue("tunnelgw_server")
        yield server.operator
        return
    from tunnelgw.testing.accounts import TunnelgwOperator

    operator = TunnelgwOperator(*remote)
    try:
        yield operator
    finally:
        operator.close()


def _account_name(config: pytest.Config, what: str) -> str:
    worker = getattr(config, "workerinput", {}).get("workerid", "main")
    return f"pytest {worker} {what}"[:MAX_ACCOUNT_NAME]


@contextlib.contextmanager
def _made_account(
    config: pytest.Config, operator: TunnelgwOperator, what: str
) -> Iterator[TunnelgwAccount]:
    made = operator.create_account(_account_name(config, what), _fixture(config))
    try:
        yield made
    finally:
        made.drop()


@pytest.fixture
def account(
    request: pytest.FixtureRequest, pytestconfig: pytest.Config, tunnelgw_operator: TunnelgwOperator
) -> Iterator[TunnelgwAccount]:
    """A fresh account of this test's own on the session's server, with the
    `--tunnelgw-fixture` file loaded; dropped with everything in it after the test."""
    with _made_account(pytestconfig, tunnelgw_operator, request.node.nodeid) as made:
        yield made


@pytest.fixture(scope="session")
def worker_account(
    pytestconfig: pytest.Config, tunnelgw_operator: TunnelgwOperator
) -> Iterator[TunnelgwAccount]:
    """One account for the session (per xdist worker) on the session's server, with the
    `--tunnelgw-fixture` file loaded; dropped at the session's end."""
    with _made_account(pytestconfig, tunnelgw_operator, "session") as made:
        yield made


@pytest.fixture
def tunnelgw(request: pytest.FixtureRequest, pytestconfig: pytest.Config) -> Any:
    """The session's server with a fresh state: its account emptied, fault rules cleared,
    clock reset, and the `--tunnelgw-fixture` file loaded again. With `--tunnelgw-url` or
    `--tunnelgw-shared`, the same on the worker's account (`worker_account`)."""
    name = "tunnelgw_server" if _remote(pytestconfig) is None else "worker_account"
    target: Any = request.getfixturevalue(name)
    target.reset()
    fixture = _fixture(pytestconfig)
    if fixture is not None:
        target.load(fixture)
    return target


def _server_of(item: pytest.Item) -> TunnelgwServer | None:
    funcargs: dict[str, Any] = getattr(item, "funcargs", {})
    server: Any = funcargs.get("tunnelgw") or funcargs.get("tunnelgw_server")
    if server is None or not hasattr(server, "log_position"):  # not a TunnelgwServer
        # `account`, `worker_account`: the operator of a server started here knows it.
        server = getattr(funcargs.get("tunnelgw_operator"), "server", None)
    found: TunnelgwServer | None = server
    return found


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
