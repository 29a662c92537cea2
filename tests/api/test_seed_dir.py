"""Issue 32: the seed directory. `tunnelgw serve --seed-dir DIR` loads every fixture and
snapshot file of DIR at start, in name order, into the accounts they name or new ones, once
per data directory; a bad file stops the start with its name and line. Run on the engine
under test (the session's database), `serve` up to the point where uvicorn would start."""

from __future__ import annotations

import json
import logging.config
import os
import uuid
from typing import Any

import pytest

from tests.conftest import OPERATOR_TOKEN
from tunnelgw import cli
from tunnelgw.crypto import keys
from tunnelgw.seeding import seeddir

HRB = "/backends/http_response"


@pytest.fixture
def serve(settings, monkeypatch, tmp_path):  # type: ignore[no-untyped-def]
    """`tunnelgw serve` on the session's database and a data directory of its own, uvicorn
    faked; returns (exit status, stdout, stderr)."""
    import uvicorn

    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: None)
    monkeypatch.setattr(logging.config, "dictConfig", lambda config: None)
    others = ("PROMETHEUS_MULTIPROC_DIR", "TUNNELGW_BOOTSTRAP_TOKEN", "TUNNELGW_OPERATOR_TOKEN")
    for var in {*cli.SERVE_FLAGS.values(), *others, "TUNNELGW_ADMIN_API"}:
        monkeypatch.setenv(var, "")
        monkeypatch.delenv(var)
    monkeypatch.setenv("TUNNELGW_DATA_DIR", str(tmp_path / "data"))
    if settings.database_url:
        monkeypatch.setenv("TUNNELGW_DATABASE_URL", settings.database_url)
    else:  # SQLite: the session's database file, in its data directory
        monkeypatch.setenv("TUNNELGW_DATABASE_URL", settings.resolved_database_url())
    # The session app's key-encryption key: secrets the loads write read back in the tests.
    kek = settings.data_dir / keys.KEK_FILE
    if kek.exists():
        (tmp_path / "data").mkdir(mode=0o700)
        (tmp_path / "data" / keys.KEK_FILE).write_bytes(kek.read_bytes())

    def run(capsys: Any, *argv: str) -> tuple[int, str, str]:
        status = cli.main(["serve", *argv])
        out, err = capsys.readouterr()
        return status, out, err

    return run


def _report(out: str) -> dict[str, Any]:
    report: dict[str, Any] = json.loads(out[out.index('{\n  "seed_dir"') :])
    return report


def test_the_directory_loads_on_the_first_start_and_not_on_a_restart(
    serve, factory, tmp_path, capsys
):
    name = f"shop-{uuid.uuid4().hex[:8]}"
    seeds = tmp_path / "seeds"
    seeds.mkdir()
    (seeds / "010-shop.yaml").write_text(
        f"version: 1\naccount: {name}\ntunnels: [{{ref: t}}]\n"
        "api:\n  http_response_backends: [{ref: b, body: one}]\n"
    )
    (seeds / "020-shop-more.yml").write_text(
        f"version: 1\naccount: {name}\napi:\n  http_response_backends: [{{body: two}}]\n"
    )
    (seeds / "030-own.json").write_text('{"version": 1, "tunnels": [{"ref": "t"}]}')
    (seeds / "README.txt").write_text("not a fixture: left alone")
    source = factory.client(OPERATOR_TOKEN).post("/_admin/accounts", json={}).json()
    owner = factory.client(source["token"])
    backend = owner.post(HRB, json={"body": "snapped"}).json()
    (seeds / "040-snap.json").write_text(json.dumps(owner.get("/_admin/snapshot").json()))
    factory.client(OPERATOR_TOKEN).delete(f"/_admin/accounts/{source['id']}")

    status, out, err = serve(capsys, "--seed-dir", str(seeds))
    assert status == 0, err
    report = _report(out)
    loaded = report["loaded"]
    assert [f["file"] for f in loaded] == [
        "010-shop.yaml",
        "020-shop-more.yml",
        "030-own.json",
        "040-snap.json",
    ]
    assert [f["account_created"] for f in loaded] == [True, False, True, True]
    assert loaded[0]["account_id"] == loaded[1]["account_id"]
    assert loaded[3]["account_id"] == source["id"]  # a snapshot restores its own account
    assert loaded[1]["token"] is None
    shop = factory.client(loaded[0]["token"])
    assert sorted(b["body"] for b in shop.get(HRB).json()["backends"]) == ["one", "two"]
    own = factory.client(loaded[2]["token"])
    assert len(own.get("/tunnels").json()["tunnels"]) == 1
    assert own.get(HRB).json()["backends"] == []
    restored = factory.client(loaded[3]["token"]).get(HRB).json()["backends"]
    assert [b["id"] for b in restored] == [backend["id"]]
    names = {a["id"]: a["name"] for a in _accounts(factory)}
    assert (names[loaded[0]["account_id"]], names[loaded[2]["account_id"]]) == (name, "030-own")

    # A restart on the same data directory loads nothing again.
    status, out, err = serve(capsys, "--seed-dir", str(seeds))
    assert status == 0, err
    again = _report(out)
    assert (again["loaded"], again["changed"]) == ([], [])
    assert again["skipped"] == [f["file"] for f in loaded]
    assert sorted(b["body"] for b in shop.get(HRB).json()["backends"]) == ["one", "two"]

    # A new file loads at the next start; a changed one is reported, not loaded again.
    (seeds / "030-own.json").write_text('{"version": 1}')
    (seeds / "050-later.yaml").write_text(f"version: 1\naccount: {name}\ntunnels: [{{}}]\n")
    status, out, err = serve(capsys, "--seed-dir", str(seeds))
    assert status == 0, err
    later = _report(out)
    assert ([f["file"] for f in later["loaded"]], later["changed"]) == (
        ["050-later.yaml"],
        ["030-own.json"],
    )
    assert len(shop.get("/tunnels").json()["tunnels"]) == 2
    record = json.loads((tmp_path / "data" / seeddir.RECORD_FILE).read_text())
    assert set(record["files"]) == {f["file"] for f in loaded} | {"050-later.yaml"}


def test_a_bad_file_stops_the_start_with_its_name_and_line(serve, factory, tmp_path, capsys):
    name = f"bad-{uuid.uuid4().hex[:8]}"
    seeds = tmp_path / "seeds"
    seeds.mkdir()
    (seeds / "01-good.yaml").write_text(f"version: 1\naccount: {name}\ntunnels: [{{}}]\n")
    (seeds / "02-bad.yaml").write_text("version: 1\ntunnels:\n  - colour: red\n")
    before = len(_accounts(factory))
    status, _out, err = serve(capsys, "--seed-dir", str(seeds))
    assert status == 2
    assert f"{seeds / '02-bad.yaml'}:3:5: $.tunnels[0].colour: unknown key 'colour'" in err
    assert "nothing was written" in err
    assert len(_accounts(factory)) == before  # not even the good file was loaded
    assert not (tmp_path / "data" / seeddir.RECORD_FILE).exists()
    # An api item refused at load: the start stops; the file's new account is gone again.
    (seeds / "02-bad.yaml").write_text(
        "version: 1\napi:\n  http_response_backends: [{status_code: 999}]\n"
    )
    status, _out, err = serve(capsys, "--seed-dir", str(seeds))
    assert status == 2
    assert f"{seeds / '02-bad.yaml'}:3:" in err
    assert "ERR_" in err
    assert "the files before it stay loaded" in err
    record = json.loads((tmp_path / "data" / seeddir.RECORD_FILE).read_text())
    assert set(record["files"]) == {"01-good.yaml"}
    assert len(_accounts(factory)) == before + 1  # 01-good's; 02-bad's was deleted again
    missing = tmp_path / "missing"
    with pytest.raises(SystemExit, match="not a directory"):
        serve(capsys, "--seed-dir", str(missing))
    assert os.environ["TUNNELGW_SEED_DIR"] == str(missing)


def _accounts(factory: Any) -> list[dict[str, Any]]:
    operator = factory.client(OPERATOR_TOKEN)
    found: list[dict[str, Any]] = []
    params: dict[str, Any] = {"limit": 100}
    for _ in range(1000):
        page = operator.get("/_admin/accounts", params=params).json()
        found += page["accounts"]
        if page["next_page_uri"] is None:
            return found
        params["before_id"] = page["accounts"][-1]["id"]
    raise AssertionError("too many accounts")


def test_the_operator_token_is_never_an_accounts_key(serve, factory, capsys, monkeypatch):
    made = factory.client(OPERATOR_TOKEN).post("/_admin/accounts", json={}).json()
    monkeypatch.setenv("TUNNELGW_OPERATOR_TOKEN", made["token"])
    with pytest.raises(SystemExit, match="is the token of an account's API key"):
        serve(capsys)
    monkeypatch.setenv("TUNNELGW_OPERATOR_TOKEN", OPERATOR_TOKEN)
    status, _out, err = serve(capsys)  # the admin API is off: said, and the start goes on
    assert status == 0
    assert "TUNNELGW_OPERATOR_TOKEN is set but the admin API is off" in err
    monkeypatch.setenv("TUNNELGW_OPERATOR_TOKEN", "short")
    assert serve(capsys)[0] == 2  # too weak: refused, as a bootstrap token would be
    assert (
        factory.client(OPERATOR_TOKEN).delete(f"/_admin/accounts/{made['id']}").status_code == 200
    )
