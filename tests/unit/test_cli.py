"""The command line: migrate, accounts, principals and keys against a throwaway database,
and the first-start bootstrap."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import pickle
import sys
from types import SimpleNamespace

import pytest
from pydantic import ValidationError
from sqlmodel import select

from tunnelgw import cli
from tunnelgw.core.settings import Settings
from tunnelgw.http import edge
from tunnelgw.migrations import migrate
from tunnelgw.models import Account, ApiKey, Principal
from tunnelgw.services import accounts
from tunnelgw.storage.db import Database


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


def test_the_command_runs_with_the_collector_back_on(data_dir, capsys, monkeypatch):
    """The `tunnelgw` command pauses the garbage collector only while it imports."""
    import gc

    from tunnelgw.__main__ import run

    seen = []
    monkeypatch.setattr(cli, "main", lambda: seen.append(gc.isenabled()) or 0)
    assert run() == 0
    assert seen == [True]
    assert gc.isenabled()


@pytest.fixture
def oo_bytecode(monkeypatch, tmp_path):
    """`tunnelgw.__main__` as in a process started as `tunnelgw serve --port 9` by a plain
    interpreter whose bytecode can be cached (the package's folder is `tmp_path`); returns
    the `-OO` bytecode's path there."""
    from tunnelgw import __main__ as entry

    monkeypatch.setattr(sys, "orig_argv", ["/venv/bin/python", "/venv/bin/tunnelgw", *SERVE])
    monkeypatch.setattr(sys, "flags", SimpleNamespace(optimize=0))
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    monkeypatch.delenv("TUNNELGW_OPTIMIZE", raising=False)
    monkeypatch.setattr(entry, "__file__", str(tmp_path / "__main__.py"))
    return tmp_path / "__pycache__" / f"__main__.{sys.implementation.cache_tag}.opt-2.pyc"


SERVE = ["serve", "--port", "9"]


def test_serve_starts_again_under_python_oo_unless_told_or_unable(oo_bytecode, monkeypatch):
    """`tunnelgw serve` starts itself again as `python -OO` (less memory per worker), except:
    another command; arguments other than the process's own (a program calling `run()`);
    `TUNNELGW_OPTIMIZE` off; an interpreter with an optimization level of its own; no way to
    cache the `-OO` bytecode (each start would compile every module)."""
    from tunnelgw.__main__ import optimizes

    assert optimizes(SERVE)
    assert not optimizes(["migrate"])
    assert not optimizes(["serve", "--port", "10"])
    for off in ("false", "0", "No", " off "):
        monkeypatch.setenv("TUNNELGW_OPTIMIZE", off)
        assert not optimizes(SERVE), off
    monkeypatch.setenv("TUNNELGW_OPTIMIZE", "true")
    assert optimizes(SERVE)
    monkeypatch.setattr(sys, "flags", SimpleNamespace(optimize=1))
    assert not optimizes(SERVE)
    monkeypatch.setattr(sys, "flags", SimpleNamespace(optimize=0))
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    assert not optimizes(SERVE)  # nothing cached, and nothing may be
    oo_bytecode.parent.mkdir()
    oo_bytecode.write_bytes(b"")
    assert optimizes(SERVE)  # cached already (an image built with `python -OO -m compileall`)


def test_the_setting_refuses_what_is_neither_true_nor_false(monkeypatch):
    monkeypatch.setenv("TUNNELGW_OPTIMIZE", "sometimes")
    with pytest.raises(ValidationError, match="boolean"):
        Settings()


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
        database = Database(f"sqlite:///{data_dir / 'tunnelgw.db'}")
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
        database = Database(f"sqlite:///{tmp_path / 'b.db'}")
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


BOOT_TOKEN = "tgw_boot_Jq3vX9mR2kLp7wZt4nYb8cHs1dFg6aE0"


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
    monkeypatch.setenv("TUNNELGW_BOOTSTRAP_TOKEN", BOOT_TOKEN)
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
                "--version-header-alias",
                "A-Version,b-version",
                "--database-pool-size",
                "7",
                "--header-timeout-seconds",
                "2.5",
                "--body-timeout-seconds",
                "9",
                "--max-header-bytes",
                "4096",
                "--max-connections",
                "50",
            ]
        )
        == 0
    )
    # The limits reach the HTTP protocol, which the worker processes unpickle.
    protocol = pickle.loads(pickle.dumps(seen["http"]))
    assert protocol.func is edge.EdgeProtocol
    assert protocol.keywords["limits"] == edge.Limits(2.5, 9.0, 4096)
    assert seen["limit_concurrency"] == 50
    assert os.environ["TUNNELGW_VERSION_HEADER_ALIASES"] == "A-Version,b-version"
    assert os.environ["TUNNELGW_DATABASE_POOL_SIZE"] == "7"
    out = capsys.readouterr().out
    # A token the operator chose is never written out (a generated one is, once).
    assert BOOT_TOKEN not in out
    assert "token the one TUNNELGW_BOOTSTRAP_TOKEN sets" in out
    assert 'curl -H "Authorization: Bearer $TUNNELGW_BOOTSTRAP_TOKEN"' in out
    assert "http://example.test/api_keys" in out
    assert seen["port"] == 9123
    assert seen["workers"] == 2
    assert seen["timeout_keep_alive"] == 75
    assert seen["ws"] == "none"  # no WebSocket endpoint: the websockets package stays out
    assert configured[0]["loggers"]["tunnelgw"]["level"] == "WARNING"
    assert seen["log_config"] == configured[0]
    assert seen["app"] == "tunnelgw.worker:create_app"
    # Several workers share one fresh Prometheus directory in the data dir.
    assert os.environ["PROMETHEUS_MULTIPROC_DIR"] == str(data_dir / "prometheus")
    assert (data_dir / "prometheus").is_dir()
    # Restarting does not bootstrap again.
    assert cli.main(["serve", "--port", "9123"]) == 0
    assert "created the first account" not in capsys.readouterr().out


# Fixtures: seed, reset, serve --seed.

SMALL = "version: 1\ntunnels: [{ref: t}]\napi:\n  http_response_backends: [{ref: b, body: hi}]\n"


@pytest.fixture
def fixture_file(tmp_path):
    path = tmp_path / "fixture.yaml"
    path.write_text(SMALL)
    return path


def _isolate_serve_env(monkeypatch) -> list[dict]:
    """Fake uvicorn and logging setup; undo what serve exports. The configs recorded."""
    import logging.config

    import uvicorn

    calls: list[dict] = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: calls.append(kw))
    monkeypatch.setattr(logging.config, "dictConfig", lambda config: None)
    for var in {*cli.SERVE_FLAGS.values(), "PROMETHEUS_MULTIPROC_DIR"} - {"TUNNELGW_DATA_DIR"}:
        monkeypatch.setenv(var, "")
        monkeypatch.delenv(var)
    return calls


def test_seed_loads_into_the_oldest_admin_account_and_once_skips(data_dir, capsys, fixture_file):
    first = run(capsys, "accounts", "create", "--name", "first")
    second = run(capsys, "accounts", "create", "--name", "second")
    summary = run(capsys, "seed", str(fixture_file))
    assert summary["account_id"] == first["account_id"]
    assert summary["loaded"] is True
    assert summary["labels"]["t"].startswith("tn_")
    assert summary["labels"]["b"].startswith("bkdhr_")
    assert summary["counts"] == {"tunnels": 1, "api.http_response_backends": 1}
    assert run(capsys, "seed", str(fixture_file), "--once")["loaded"] is False
    again = run(capsys, "seed", str(fixture_file), "--once", "--account", second["account_id"])
    assert (again["account_id"], again["loaded"]) == (second["account_id"], True)
    assert run(capsys, "seed", str(fixture_file))["loaded"] is True  # seed always loads


def test_seed_reports_every_problem_and_exits_2(data_dir, capsys, tmp_path):
    run(capsys, "accounts", "create")
    bad = tmp_path / "bad.yaml"
    bad.write_text("version: 1\ntunnels: [{colour: red}]\nedges: [{}]\n")
    assert cli.main(["seed", str(bad)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err == [
        f"{bad}:2:12: $.tunnels[0].colour: unknown key 'colour'",
        f"{bad}:3:9: $.edges[0]: 'kind' is required",
        f"tunnelgw: {bad}: 2 problem(s); nothing was written",
    ]
    refused = tmp_path / "refused.yaml"
    refused.write_text("version: 1\napi:\n  certificate_authorities: [{ca_pem: nope}]\n")
    assert cli.main(["seed", str(refused)]) == 2
    err = capsys.readouterr().err
    assert f"{refused}:3:38: $.api.certificate_authorities[0].ca_pem: POST" in err
    assert "ERR_INVALID_PEM" in err
    assert "the rows before it were written" in err


def test_seed_needs_an_account_and_a_file(data_dir, tmp_path, fixture_file):
    with pytest.raises(SystemExit, match="no account with an admin"):
        cli.main(["seed", str(fixture_file)])
    with pytest.raises(SystemExit, match="no account 'acct_missing'"):
        cli.main(["seed", str(fixture_file), "--account", "acct_missing"])
    with pytest.raises(SystemExit, match="No such file"):
        cli.main(["seed", str(tmp_path / "missing.yaml")])


def test_reset_needs_yes_and_keeps_the_credentials(data_dir, capsys, fixture_file):
    account = run(capsys, "accounts", "create")["account_id"]
    run(capsys, "seed", str(fixture_file))
    with pytest.raises(SystemExit, match="pass --yes"):
        cli.main(["reset", "--account", account])
    out = run(capsys, "reset", "--account", account, "--yes")
    assert out["account_id"] == account
    assert out["deleted"]["tunnel"] == 1
    assert out["deleted"]["http_response_backend"] == 1
    assert out["deleted"]["fixture_load"] == 1
    assert {"account", "principal", "api_key"}.isdisjoint(out["deleted"])
    assert run(capsys, "reset", "--account", account, "--yes")["deleted"]["tunnel"] == 0
    with pytest.raises(SystemExit, match="no account 'acct_missing'"):
        cli.main(["reset", "--account", "acct_missing", "--yes"])


def _json_tail(out: str) -> dict:
    return json.loads(out[out.index("{") :])


def test_serve_seed_loads_once_before_the_workers(data_dir, monkeypatch, capsys, fixture_file):
    calls = _isolate_serve_env(monkeypatch)
    assert cli.main(["serve", "--seed", str(fixture_file)]) == 0
    first = _json_tail(capsys.readouterr().out)  # after the bootstrap's message
    assert first["loaded"] is True
    assert os.environ["TUNNELGW_SEED"] == str(fixture_file)
    # a restart with the same file (here from the environment) does not load it again
    assert cli.main(["serve"]) == 0
    assert _json_tail(capsys.readouterr().out)["loaded"] is False
    assert len(calls) == 2


def test_serve_seed_account_and_a_bad_file(data_dir, monkeypatch, capsys, tmp_path, fixture_file):
    calls = _isolate_serve_env(monkeypatch)
    account = run(capsys, "accounts", "create")["account_id"]
    monkeypatch.setenv("TUNNELGW_SEED", str(fixture_file))
    monkeypatch.setenv("TUNNELGW_SEED_ACCOUNT", account)
    assert cli.main(["serve"]) == 0
    assert _json_tail(capsys.readouterr().out)["account_id"] == account
    bad = tmp_path / "bad.yaml"
    bad.write_text("version: 1\ntunnels: [{ref: '@x'}]\n")
    assert cli.main(["serve", "--seed", str(bad)]) == 2
    assert "$.tunnels[0].ref" in capsys.readouterr().err
    assert len(calls) == 1  # the server did not start


# Deterministic runs: serve --deterministic-ids.


@pytest.fixture
def unseeded():
    from tunnelgw.core import ids

    ids.seed(None)
    yield
    ids.seed(None)


def test_serve_deterministic_ids_repeat_the_bootstrap_and_the_fixture(
    tmp_path, monkeypatch, capsys, fixture_file, unseeded
):
    from tunnelgw.core import ids

    calls = _isolate_serve_env(monkeypatch)
    monkeypatch.delenv("TUNNELGW_DATABASE_URL", raising=False)
    monkeypatch.delenv("TUNNELGW_BOOTSTRAP_TOKEN", raising=False)
    outputs = []
    for run_dir, seed in (("a", "s1"), ("b", "s1"), ("c", "s2")):
        ids.seed(None)  # a fresh process
        monkeypatch.setenv("TUNNELGW_DATA_DIR", str(tmp_path / run_dir))
        argv = ["serve", "--deterministic-ids", seed, "--seed", str(fixture_file)]
        assert cli.main(argv) == 0
        outputs.append(capsys.readouterr().out)
        assert os.environ["TUNNELGW_ID_SEED"] == seed  # for the app the server starts
        assert ids.current_seed() == seed  # ... which continues this sequence
    first, again, other = outputs
    assert "token (shown once): tgw_" in first
    # The bootstrap's ids and token, then the fixture's ids (the digest names the file).
    assert again == first
    assert other.split("\n")[1:3] != first.split("\n")[1:3]
    assert _json_tail(other)["labels"] != _json_tail(first)["labels"]
    # A restart on a used database would repeat them: it starts, with a warning.
    ids.seed(None)
    monkeypatch.setenv("TUNNELGW_DATA_DIR", str(tmp_path / "a"))
    assert cli.main(["serve", "--deterministic-ids", "s1"]) == 0
    assert "warning: --deterministic-ids on a database that already has" in capsys.readouterr().err
    assert len(calls) == 4


@pytest.mark.parametrize(
    ("argv", "env"),
    [
        (["--deterministic-ids", "s", "--workers", "2"], {}),
        ([], {"TUNNELGW_ID_SEED": "s", "TUNNELGW_WORKERS": "3"}),
    ],
)
def test_serve_refuses_deterministic_ids_with_several_workers(
    data_dir, monkeypatch, capsys, unseeded, argv, env
):
    calls = _isolate_serve_env(monkeypatch)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert cli.main(["serve", *argv]) == 2
    assert "--deterministic-ids (TUNNELGW_ID_SEED) needs --workers 1" in capsys.readouterr().err
    assert calls == []
    assert not (data_dir / "tunnelgw.db").exists()  # refused before touching the database


def test_serve_stops_when_the_database_cannot_be_migrated(data_dir, monkeypatch, capsys):
    calls = _isolate_serve_env(monkeypatch)

    def refuse(url: str, *, isolated: bool = False) -> None:
        assert isolated  # the server's start migrates in a child process
        raise migrate.MigrationError("OperationalError: disk I/O error")

    monkeypatch.setattr(migrate, "upgrade", refuse)
    assert cli.main(["serve"]) == 1
    assert "could not be migrated: OperationalError: disk I/O error" in capsys.readouterr().err
    assert calls == []  # uvicorn never started


@pytest.mark.parametrize(
    ("token", "why"),
    [
        ("a", "has 1 characters; it needs 32 to 512"),
        ("boot-token", "has 10 characters"),
        ("x" * 513, "has 513 characters"),
        ("a" * 40, "repeats itself"),
        ("password" * 4, "repeats itself"),
        # Three letters, never the same four in a row twice (a de Bruijn sequence).
        (
            "aaaabaaacaabbaabcaacbaaccababacabbbabbca",
            "is guessable (too few different characters: about 58 bits",
        ),
        ("tgw_boot_Jq3vX9mR2kLp7wZt4nYb8cHs1dFg6aé", "must be visible ASCII"),
        ("tgw_boot_Jq3vX9mR2kLp7wZt 4nYb8cHs1dFg6a", "must be visible ASCII"),
    ],
)
def test_a_guessable_bootstrap_token_is_refused_at_start(data_dir, monkeypatch, capsys, token, why):
    calls = _isolate_serve_env(monkeypatch)
    monkeypatch.setenv("TUNNELGW_BOOTSTRAP_TOKEN", token)
    assert cli.main(["serve"]) == 2
    err = capsys.readouterr().err
    assert f"tunnelgw: TUNNELGW_BOOTSTRAP_TOKEN: the token {why}" in err
    assert "secrets.token_urlsafe(32)" in err
    assert len(token) < 8 or token not in err  # not echoed either
    assert calls == []  # no server
    assert not (data_dir / "tunnelgw.db").exists()  # nothing made


def test_a_generated_token_is_shown_once_and_data_files_are_private(tmp_path, monkeypatch, capsys):
    data_dir = tmp_path / "new" / "data"
    calls = _isolate_serve_env(monkeypatch)
    monkeypatch.setenv("TUNNELGW_DATA_DIR", str(data_dir))
    monkeypatch.delenv("TUNNELGW_DATABASE_URL", raising=False)
    monkeypatch.delenv("TUNNELGW_BOOTSTRAP_TOKEN", raising=False)
    assert cli.main(["serve"]) == 0
    assert len(calls) == 1
    out = capsys.readouterr().out
    token = out.split("token (shown once): ")[1].split()[0]
    assert f'curl -H "Authorization: Bearer {token}"' in out
    # The data directory it made, the database and the key file: the owner's alone.
    assert data_dir.stat().st_mode & 0o777 == 0o700
    for name in ("tunnelgw.db", "tunnelgw.db.migrate.lock", "key-encryption-key"):
        assert (data_dir / name).stat().st_mode & 0o777 == 0o600, name


def test_issuing_ca_prints_the_ca_that_signs_operator_bindings(data_dir, capsys):
    from cryptography import x509

    assert cli.main(["issuing-ca"]) == 0
    first = capsys.readouterr().out
    cert = x509.load_pem_x509_certificate(first.encode())
    assert cert.subject.rfc4514_string() == "CN=tunnelgw issuing CA (kubernetes-operator-bindings)"
    assert cli.main(["issuing-ca", "kubernetes-operator-bindings"]) == 0
    assert capsys.readouterr().out == first  # made once, then read
    assert cli.main(["issuing-ca", "letsencrypt"]) == 0
    assert capsys.readouterr().out not in ("", first)
    with pytest.raises(SystemExit, match="no issuing CA 'other'"):
        cli.main(["issuing-ca", "other"])


def test_snapshot_exports_and_seed_loads_it_back(data_dir, capsys, fixture_file, tmp_path):
    account = run(capsys, "accounts", "create")["account_id"]
    run(capsys, "seed", str(fixture_file))
    first = run(capsys, "snapshot", "--account", account)
    assert first["snapshot"]["source_account_id"] == account
    assert [row["id"] for row in first["snapshot"]["tables"]["tunnel"]]
    assert first["snapshot"]["secrets"] is None
    assert {e["table"] for e in first["snapshot"]["left_out"]} == {"api_key"}
    saved = tmp_path / "world.json"
    assert cli.main(["snapshot", "--account", account, "--output", str(saved)]) == 0
    assert capsys.readouterr().out == ""
    assert saved.stat().st_mode & 0o777 == 0o600
    assert cli.main(["seed", str(saved), "--account", account]) == 2  # not empty
    assert "reset it first" in capsys.readouterr().err
    run(capsys, "reset", "--account", account, "--yes")
    loaded = run(capsys, "seed", str(saved), "--account", account, "--once")
    assert loaded["counts"]["tunnel"] == 1
    assert run(capsys, "seed", str(saved), "--account", account, "--once")["loaded"] is False
    again = run(capsys, "snapshot", "--account", account)
    for document in (first, again):
        del document["snapshot"]["taken_at"]
    assert again == first
    sealed = run(capsys, "snapshot", "--account", account, "--include-secrets")
    assert sealed["snapshot"]["left_out"] == []
    assert [e["field"] for e in sealed["snapshot"]["secrets"]["sealed"]] == ["token_hash"]
    with pytest.raises(SystemExit, match="no account 'acct_missing'"):
        cli.main(["snapshot", "--account", "acct_missing"])
