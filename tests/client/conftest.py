"""What the official-client tests share: a live `tunnelgw serve --profile platform` of their
own per module (the Go clients send `Ngrok-Version`, and their typed errors read the
platform's codes), on the suite's engine, and the machine's Go toolchain."""

from __future__ import annotations

import os
import secrets
import shutil
from collections.abc import Iterator

import pytest

from tests import pgcluster
from tests.stress.server import ROOT, Server

GO_CLIENT = ROOT / "tests" / "client" / "go"


@pytest.fixture(scope="module")
def profile_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A server with the platform profile on an empty database of its own (a fresh SQLite
    file, or a new database of the session's PostgreSQL cluster)."""
    url = None
    if os.environ.get("TUNNELGW_TEST_ENGINE") == "postgresql":
        url = pgcluster.new_database(os.environ["TUNNELGW_TEST_PG_BASE"], "client")
    server = Server(
        tmp_path_factory.mktemp("profile"),
        url,
        "tgw_profile_" + secrets.token_hex(12),
        workers=1,
        env={"TUNNELGW_PROFILE": "platform"},
    )
    server.start()
    try:
        yield server
    finally:
        server.stop()
        assert "Traceback" not in server.log(), server.log()[-5000:]


def go_toolchain() -> str:
    """The `go` command, or the test is skipped."""
    go = shutil.which("go")
    if go is None:
        pytest.skip("no Go toolchain (the polyglot machines have one)")
    return go


def go_env(server: Server) -> dict[str, str]:
    """The environment the Go programs read the server's address and token from."""
    return {**os.environ, "TUNNELGW_BASE_URL": server.base, "TUNNELGW_TOKEN": server.token}
