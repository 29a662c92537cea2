"""Contract tests: Schemathesis (examples, coverage, fuzzing and stateful phases, all checks)
against a real `tunnelgw serve` on 127.0.0.1, authenticated as the admin of a fresh account."""

from __future__ import annotations

import asyncio
import os
import secrets
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlmodel.ext.asyncio.session import AsyncSession

from models import Edge, TunnelGroupBackend
from tests.stress.server import Server
from tunnelgw import accounts, ids
from tunnelgw.db import Database
from tunnelgw.settings import Settings

pytestmark = pytest.mark.contract

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "tests" / "contract" / "schemathesis.toml"
MAX_EXAMPLES = os.environ.get("TUNNELGW_CONTRACT_EXAMPLES", "40")
MAX_TIME = os.environ.get("TUNNELGW_CONTRACT_SECONDS", "300")


# Path -> parameters pinned for its operations (`path.<name>`, `body.<field>`).
Pins = dict[str, dict[str, str]]


def _seed(session: AsyncSession, account_id: str) -> Pins:
    """Rows the API cannot create (fixtures make them), in the contract account, and the
    parameters that point the operations reading them at them: random ids would only 404."""
    edge = Edge(id=ids.new_id("edgtls"), account_id=account_id, kind="tls")
    backend = TunnelGroupBackend(id=ids.new_id(TunnelGroupBackend.PREFIX), account_id=account_id)
    session.add_all([edge, backend])
    return {"/edges/tls/{id}/backend": {"path.id": edge.id, "body.backend_id": backend.id}}


def _admin_token(database_url: str) -> tuple[str, Pins]:
    """A fresh account's admin token, made directly in the server's database (which may hold
    other accounts already, so the first-start bootstrap cannot be relied on), and the
    parameters pinned to the rows seeded in it."""

    async def make() -> tuple[str, Pins]:
        database = Database(database_url)
        try:
            async with database.write() as session:
                creds = await accounts.create_account_with_admin(session, "contract")
                return creds.token, _seed(session, creds.account_id)
        finally:
            await database.dispose()

    return asyncio.run(make())


def _config(pins: Pins, directory: Path) -> Path:
    """CONFIG plus one `[[operations]]` table per pinned path."""
    text = CONFIG.read_text()
    for path, params in pins.items():
        pairs = ", ".join(f'"{name}" = "{value}"' for name, value in params.items())
        text += f'\n[[operations]]\ninclude-path = "{path}"\nparameters = {{ {pairs} }}\n'
    config = directory / "schemathesis.toml"
    config.write_text(text)
    return config


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str, Path]]:
    """The base URL of a live server, an admin token and the config pinned to its rows."""
    data_dir = tmp_path_factory.mktemp("contract")
    database_url = os.environ.get("TUNNELGW_TEST_DATABASE_URL")
    srv = Server(data_dir, database_url, "tgw_bootstrap_" + secrets.token_hex(12), workers=1)
    srv.start()  # migrates the database and waits for /readyz
    try:
        settings = Settings(data_dir=data_dir, database_url=database_url)
        token, pins = _admin_token(settings.resolved_database_url())
        yield srv.base, token, _config(pins, data_dir)
    finally:
        srv.stop()
        assert "Traceback" not in srv.log(), srv.log()[-5000:]


def _schemathesis(
    config: Path, base: str, token: str, *extra: str
) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("schemathesis", path=str(Path(sys.executable).parent)) or "schemathesis"
    return subprocess.run(
        [
            exe,
            "--config-file",
            str(config),
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


def test_schemathesis_all_checks_all_phases(server: tuple[str, str, Path]) -> None:
    base, token, config = server
    result = _schemathesis(
        config,
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


def test_a_wrong_token_fails_the_run(server: tuple[str, str, Path]) -> None:
    base, _, config = server
    result = _schemathesis(
        config,
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
