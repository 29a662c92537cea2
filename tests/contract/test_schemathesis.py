"""Contract tests: Schemathesis (examples, coverage, fuzzing and stateful phases, all checks)
against a real `tunnelgw serve` on 127.0.0.1, authenticated with the bootstrap token."""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

pytestmark = pytest.mark.contract

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "tests" / "contract" / "schemathesis.toml"
MAX_EXAMPLES = os.environ.get("TUNNELGW_CONTRACT_EXAMPLES", "40")
MAX_TIME = os.environ.get("TUNNELGW_CONTRACT_SECONDS", "300")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    token = "tgw_contract_" + secrets.token_hex(16)
    port = _free_port()
    data_dir = tmp_path_factory.mktemp("contract")
    env = {
        **os.environ,
        "TUNNELGW_BOOTSTRAP_TOKEN": token,
        "TUNNELGW_DATA_DIR": str(data_dir),
        "TUNNELGW_LOG_LEVEL": "warning",
    }
    env.pop("TUNNELGW_DATABASE_URL", None)
    if os.environ.get("TUNNELGW_TEST_DATABASE_URL"):
        env["TUNNELGW_DATABASE_URL"] = os.environ["TUNNELGW_TEST_DATABASE_URL"]
    log = (data_dir / "server.log").open("w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "tunnelgw", "serve", "--host", "127.0.0.1", "--port", str(port)],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        cwd=ROOT,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"server did not start:\n{(data_dir / 'server.log').read_text()}")
            time.sleep(0.2)
        yield base, token
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:  # pragma: no cover - only a hung server gets here
            proc.kill()
        log.close()
        server_log = (data_dir / "server.log").read_text()
        assert "Traceback" not in server_log, server_log


def _schemathesis(base: str, token: str, *extra: str) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("schemathesis", path=str(Path(sys.executable).parent)) or "schemathesis"
    return subprocess.run(
        [
            exe,
            "--config-file",
            str(CONFIG),
            "--no-color",
            "run",
            f"{base}/openapi.json",
            "-H",
            f"Authorization: Bearer {token}",
            *extra,
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=int(MAX_TIME) + 120,
        env={**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1"},
    )


def test_schemathesis_all_checks_all_phases(server: tuple[str, str]) -> None:
    base, token = server
    result = _schemathesis(
        base,
        token,
        "--max-examples",
        MAX_EXAMPLES,
        "--max-time",
        MAX_TIME,
        "--report",
        "junit",
        "--report-dir",
        str(ROOT / ".schemathesis-report"),
    )
    print(result.stdout[-20000:])
    assert result.returncode == 0, result.stdout[-20000:] + result.stderr[-5000:]
    assert "Stateful" in result.stdout


def test_a_wrong_token_fails_the_run(server: tuple[str, str]) -> None:
    base, _ = server
    result = _schemathesis(
        base,
        "tgw_wrong",
        "--phases",
        "examples",
        "--max-examples",
        "3",
        "--include-path-regex",
        "^/api_keys",
    )
    assert result.returncode != 0, result.stdout
    assert "401" in result.stdout
