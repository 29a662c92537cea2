"""Issue 32: the testing kit's accounts on demand. `TunnelgwServer.create_account()` and the
pytest plugin's `account` / `worker_account` fixtures give each test (or each xdist worker)
an account of its own on one server, dropped afterwards; two xdist workers against one
server each see only their own account."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from tests.api.test_testing_kit import ROOT, WORLD, kit  # noqa: F401 - the child pytest's fixture
from tunnelgw.testing import TunnelgwError, TunnelgwServer

HRB = "/backends/http_response"


@pytest.fixture(scope="module")
def server():  # type: ignore[no-untyped-def]
    with TunnelgwServer() as started:
        yield started


def test_an_account_on_demand_sees_only_itself_and_goes_with_drop(server, tmp_path):
    world = tmp_path / "world.yaml"
    world.write_text(WORLD)
    with server.client() as own:
        assert own.post(HRB, json={"body": "the server's"}).status_code == 201
    with server.create_account("one", fixture=world) as made:
        assert made.fixture is not None
        assert made.fixture["counts"] == {"tunnels": 1}
        with made.client() as client:
            assert client.get(HRB).json()["backends"] == []
            assert len(client.get("/tunnels").json()["tunnels"]) == 1
            assert client.post(HRB, json={"body": "mine"}).status_code == 201
        made.reset()  # the admin calls act on the account
        with made.client() as client:
            assert client.get("/tunnels").json()["tunnels"] == []
        listed = {a["id"]: a["name"] for a in server.accounts()}
        assert (listed[made.account_id], listed[server.account_id]) == ("one", "default")
    assert made.dropped
    assert made.account_id not in {a["id"] for a in server.accounts()}
    with made.client() as client:
        assert client.get(HRB).status_code == 401
    assert made.drop() == {}  # again: nothing
    with server.client() as own:
        assert [b["body"] for b in own.get(HRB).json()["backends"]] == ["the server's"]


def test_a_bad_fixture_is_refused_before_it_is_sent(server, tmp_path):
    from tunnelgw.seeding import FixtureError

    before = len(server.accounts())
    bad = tmp_path / "bad.yaml"
    bad.write_text("version: 1\ntunnels: [{colour: red}]\n")
    with pytest.raises(FixtureError, match=r"bad.yaml:2:12"):
        server.create_account(fixture=bad)
    with pytest.raises(TunnelgwError) as refused:
        server.create_account(fixture={"version": 1, "api": {"vaults": [{"name": ""}]}})
    assert refused.value.error_code == "ERR_INVALID_FIXTURE"
    assert len(server.accounts()) == before
    with pytest.raises(TunnelgwError) as wrong:
        server.operator.drop_account(server.account_id.replace("acct_", "acct_0")[:32])
    assert wrong.value.status in (400, 404)


PARALLEL_TESTS = """\
import json
import os
from pathlib import Path

import pytest

HRB = "/backends/http_response"


def _record(kind, made, marker):
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    out = Path(os.environ["KIT_OUT"]) / f"{worker}-{marker}.json"
    out.write_text(json.dumps({
        "kind": kind,
        "worker": worker,
        "account_id": made.account_id,
        "base_url": made.base_url,
    }))


@pytest.mark.parametrize("n", range(6))
def test_each_test_sees_only_its_account(account, n):
    marker = f"test-{n}"
    with account.client() as client:
        assert client.post(HRB, json={"body": marker}).status_code == 201
        seen = [b["body"] for b in client.get(HRB).json()["backends"]]
        assert seen == [marker]
        assert len(client.get("/tunnels").json()["tunnels"]) == 1  # --tunnelgw-fixture
    _record("account", account, marker)


@pytest.mark.parametrize("n", range(4))
def test_each_worker_has_its_account(worker_account, n):
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    with worker_account.client() as client:
        assert client.post(HRB, json={"body": f"{worker}-{n}"}).status_code == 201
        seen = {b["body"].split("-")[0] for b in client.get(HRB).json()["backends"]}
        assert seen == {worker}  # nothing of the other worker
    _record("worker", worker_account, f"worker-{n}")
"""


def _child_suite(tmp_path: Path) -> tuple[Path, Path]:
    folder = tmp_path / "suite"
    folder.mkdir()
    (folder / "world.yaml").write_text(WORLD)
    (folder / "test_parallel.py").write_text(PARALLEL_TESTS)
    (folder / "pytest.ini").write_text(
        textwrap.dedent(
            """\
            [pytest]
            filterwarnings = error
            tunnelgw_fixture = world.yaml
            """
        )
    )
    out = tmp_path / "out"
    out.mkdir()
    return folder, out


def _records(out: Path) -> list[dict[str, str]]:
    return [json.loads(path.read_text()) for path in sorted(out.glob("*.json"))]


def test_two_xdist_workers_on_one_server_each_see_only_their_account(kit, server, tmp_path):  # noqa: F811
    """The server runs here (a CI job's service container); the child suite's two workers
    reach it with --tunnelgw-url and the operator token."""
    folder, out = _child_suite(tmp_path)
    before = {a["id"] for a in server.accounts()}
    done = kit.pytest(
        folder,
        "-n",
        "2",
        "--dist",
        "each",  # both workers run every test, at the same time, on the one server
        "--tunnelgw-url",
        server.base_url,
        KIT_OUT=str(out),
        TUNNELGW_OPERATOR_TOKEN=server.operator_token,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "20 passed" in done.stdout, done.stdout
    records = _records(out)
    tests = [r for r in records if r["kind"] == "account"]
    workers = {(r["worker"], r["account_id"]) for r in records if r["kind"] == "worker"}
    assert {r["worker"] for r in records} == {"gw0", "gw1"}  # both workers ran the tests
    assert len({r["account_id"] for r in tests}) == 12  # one account per test and worker
    assert len(workers) == 2  # one account per worker
    assert len({account for _, account in workers}) == 2
    assert {r["base_url"] for r in records} == {server.base_url}  # one server
    assert {a["id"] for a in server.accounts()} == before  # every one dropped


def _documented_example() -> str:
    """The `account` example of docs/testing-your-code.md."""
    section = (ROOT / "docs" / "testing-your-code.md").read_text()
    section = section[section.index("## Accounts per test or per worker") :]
    start = section.index("```python\n") + len("```python\n")
    return section[start : section.index("```\n", start)]


def test_a_shared_server_for_the_workers(kit, tmp_path):  # noqa: F811
    """--tunnelgw-shared: the xdist controller starts one server for both workers (which
    run the documented example too)."""
    folder, out = _child_suite(tmp_path)
    (folder / "test_documented.py").write_text(_documented_example())
    done = kit.pytest(folder, "-n", "2", "--dist", "each", "--tunnelgw-shared", KIT_OUT=str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "26 passed" in done.stdout, done.stdout
    records = _records(out)
    assert len({r["base_url"] for r in records}) == 1
    assert {r["worker"] for r in records} == {"gw0", "gw1"}
    assert len({r["account_id"] for r in records if r["kind"] == "account"}) == 12
