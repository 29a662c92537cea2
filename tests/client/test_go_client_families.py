"""The platform's official Go client (`github.com/ngrok/ngrok-api-go/v9`, unchanged) drives
every family tunnelgw serves the way the client's own integration test does: create equals
get, update equals get, the list holds the updated object, delete, then `IsNotFound`
(tests/client/go/families_test.go, `go test` with the machine's Go, modules from the Go
module proxy), against a live `tunnelgw serve --profile platform`, on the suite's engine.

v8 of the client is not tested: the module proxy refuses github.com/ngrok/ngrok-api-go/v8
("403 Forbidden: This module version is not available").
Marked `client`, as the other official-client tests.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import subprocess
import uuid
from collections.abc import Iterator

import pytest

from tests import pgcluster
from tests.stress.server import ROOT, Server

pytestmark = pytest.mark.client

GO_CLIENT = ROOT / "tests" / "client" / "go"


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    url = None
    if os.environ.get("TUNNELGW_TEST_ENGINE") == "postgresql":
        url = pgcluster.create_database(
            os.environ["TUNNELGW_TEST_PG_BASE"], f"goclient_{uuid.uuid4().hex[:10]}"
        )
    server = Server(
        tmp_path_factory.mktemp("gofamilies"),
        url,
        "tgw_gofamilies_" + secrets.token_hex(12),
        workers=1,
        env={"TUNNELGW_PROFILE": "platform"},
    )
    server.start()
    try:
        yield server
    finally:
        server.stop()
        assert "Traceback" not in server.log(), server.log()[-5000:]


def test_every_family_round_trips(live: Server) -> None:
    go = shutil.which("go")
    if go is None:
        pytest.skip("no Go toolchain (the polyglot machines have one)")
    ran = subprocess.run(
        [go, "test", "-count=1", "-v", "./..."],
        cwd=GO_CLIENT,
        env={**os.environ, "TUNNELGW_BASE_URL": live.base, "TUNNELGW_TOKEN": live.token},
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert ran.returncode == 0, ran.stdout[-20000:] + ran.stderr[-5000:]
    passed = set(re.findall(r"^--- PASS: (\w+)", ran.stdout, re.MULTILINE))
    assert "SKIP" not in ran.stdout, ran.stdout
    assert len(passed) >= 11, ran.stdout
