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

import re
import subprocess

import pytest

from tests.client.conftest import GO_CLIENT, go_env, go_toolchain
from tests.stress.server import Server

pytestmark = pytest.mark.client


def test_every_family_round_trips(profile_server: Server) -> None:
    go = go_toolchain()
    ran = subprocess.run(
        [go, "test", "-count=1", "-v", "./..."],
        cwd=GO_CLIENT,
        env=go_env(profile_server),
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert ran.returncode == 0, ran.stdout[-20000:] + ran.stderr[-5000:]
    passed = set(re.findall(r"^--- PASS: (\w+)", ran.stdout, re.MULTILINE))
    assert "SKIP" not in ran.stdout, ran.stdout
    assert len(passed) >= 11, ran.stdout
