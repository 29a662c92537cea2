"""The command line: migrate, accounts, principals and keys against a throwaway database,
and the first-start bootstrap."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os

import pytest
from sqlmodel import select

from models import Account, ApiKey, Principal
from tunnelgw import accounts, cli, migrate
from tunnelgw.db import Database


@pytest.fixture
def data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("TUNNELGW_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("TUNNELGW_DATABASE_URL", raising=False)
    return tmp_path


def run(capsys, *argv: str) -> dict:
    assert cli.main(list(argv)) == 0
    return json.loads(capsys.readouterr().out)


def test_migrate_creates_the_database(data_dir, capsys):
    assert cli.main(["migrate"]) == 0
    assert "up to date" in capsys.readouterr().out
    assert (data_dir / "tunnelgw.db").exists()


def test_account_principal_and_key(data_dir, capsys):
    account = run(capsys, "accounts", "create", "--name", "acme")
    assert account["account_id"].startswith("acct_")
    assert account["principal_id"].startswith("usr_")
    assert account["token"].startswith("tgw_")

    bot = run(capsys, "principals", "create", "--account", account["account_id"], "--kind", "bot")
    assert bot["id"].startswith("bot_")
    assert bot["is_admin"] is False

    key = run(capsys, "keys", "create", "--owner", bot["id"], "--description", "deploy")
    assert key["owner_id"] == bot["id"]

    async def stored() -> tuple[list, list]:
        database = Database(f"sqlite+aiosqlite:///{data_dir / 'tunnelgw.db'}")
        async with database.read() as session:
            keys = list((await session.exec(select(ApiKey))).all())
            principals = list((await session.exec(select(Principal))).all())
        await database.dispose()
        return keys, principals

    keys, principals = asyncio.run(stored())
    assert {k.token_hash for k in keys} == {
        hashlib.sha256(t.encode()).hexdigest() for t in (account["token"], key["token"])
    }
    assert len(principals) == 2
    raw = (data_dir / "tunnelgw.db").read_bytes()
    assert account["token"].encode() not in raw
    assert key["token"].encode() not in raw


def test_unknown_account_or_owner_exits_with_a_message(data_dir):
    with pytest.raises(SystemExit, match="no account"):
        cli.main(["principals", "create", "--account", "acct_missing"])
    with pytest.raises(SystemExit, match="no principal"):
        cli.main(["keys", "create", "--owner", "usr_missing"])


def test_bootstrap_only_on_an_empty_database(tmp_path):
    migrate.upgrade(f"sqlite:///{tmp_path / 'b.db'}")

    async def scenario() -> tuple:
        database = Database(f"sqlite+aiosqlite:///{tmp_path / 'b.db'}")
        async with database.write() as session:
            first = await accounts.bootstrap(session, token="fixed-token")
        async with database.write() as session:
            second = await accounts.bootstrap(session)
        async with database.read() as session:
            count = len((await session.exec(select(Account))).all())
            key = (await session.exec(select(ApiKey))).one()
            admin = await session.get(Principal, key.owner_id)
        await database.dispose()
        return first, second, count, key, admin

    first, second, count, key, admin = asyncio.run(scenario())
    assert first.token == "fixed-token"
    assert second is None
    assert count == 1
    assert key.token_hash == hashlib.sha256(b"fixed-token").hexdigest()
    assert admin is not None
    assert admin.is_admin


def test_serve_prepares_database_and_passes_flags(data_dir, monkeypatch, capsys):
    seen: dict = {}

    def fake_run(app: str, **kwargs: object) -> None:
        seen.update(kwargs, app=app)

    import logging.config

    import uvicorn

    monkeypatch.setattr(uvicorn, "run", fake_run)
    # Record the logging config instead of installing it in the test process (its handlers
    # would keep capsys's stream, closed after this test).
    configured: list[dict] = []
    monkeypatch.setattr(logging.config, "dictConfig", configured.append)
    monkeypatch.setenv("TUNNELGW_BOOTSTRAP_TOKEN", "boot-token")
    for var in {*cli.SERVE_FLAGS.values(), "PROMETHEUS_MULTIPROC_DIR"} - {"TUNNELGW_DATA_DIR"}:
        monkeypatch.setenv(var, "")  # recorded, so what serve exports is undone afterwards
        monkeypatch.delenv(var)
    assert (
        cli.main(
            [
                "serve",
                "--port",
                "9123",
                "--workers",
                "2",
                "--log-level",
                "warning",
                "--public-url",
                "http://example.test",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "boot-token" in out
    assert "http://example.test/api_keys" in out
    assert seen["port"] == 9123
    assert seen["workers"] == 2
    assert seen["timeout_keep_alive"] == 75
    assert configured[0]["loggers"]["tunnelgw"]["level"] == "WARNING"
    assert seen["log_config"] == configured[0]
    assert seen["app"] == "tunnelgw.app:create_app"
    # Several workers share one fresh Prometheus directory in the data dir.
    assert os.environ["PROMETHEUS_MULTIPROC_DIR"] == str(data_dir / "prometheus")
    assert (data_dir / "prometheus").is_dir()
    # Restarting does not bootstrap again.
    assert cli.main(["serve", "--port", "9123"]) == 0
    assert "boot-token" not in capsys.readouterr().out
