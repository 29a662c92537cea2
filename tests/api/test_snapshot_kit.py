"""Issue 23: account snapshots through the testing kit, as a user uses them: `snapshot()` and
`load()` of `TunnelgwServer`, a world moved to a server on the other engine, and a child
pytest run with the plugin's `tunnelgw` fixture."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests import pgcluster
from tests.api.test_snapshots import build_world, comparable, snapshot, views
from tests.api.test_testing_kit import Kit, kit  # noqa: F401  (the child pytest's fixture)
from tunnelgw.testing import TunnelgwError, TunnelgwServer


def test_snapshot_calls_follow_the_interface():
    seen: list[tuple[str, str]] = []
    document = {"version": 1, "snapshot": {"format": 1}}

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append((request.method, str(request.url.raw_path, "ascii")))
        return httpx.Response(200, json=document)

    server = TunnelgwServer()
    server._port, server._token, server._account_id = 1, "tgw_x", "acct_x"
    server._http = server.client(transport=httpx.MockTransport(handler))
    assert server.snapshot() == document
    assert server.snapshot(include_secrets=True) == document
    assert seen == [
        ("GET", "/_admin/snapshot"),
        ("GET", "/_admin/snapshot?include_secrets=true"),
    ]
    server.stop()


@pytest.fixture(scope="module")
def other_engine(settings) -> Iterator[str | None]:
    """The database URL of the engine the tests do not run on: a throwaway PostgreSQL
    cluster's under SQLite, None (the kit's SQLite file) under PostgreSQL."""
    if settings.database_url is not None:
        yield None
        return
    try:
        pgcluster.find_binaries()
    except RuntimeError as exc:  # pragma: no cover - the test extra brings the binaries
        pytest.skip(f"no PostgreSQL binaries: {exc}")
    with pgcluster.cluster() as base:
        yield pgcluster.create_database(base, "snapshots")


def _without(document: dict[str, Any], own: dict[str, Any]) -> dict[str, Any]:
    """`document` without the rows (and left-out notes) of the ids `own` lists: the
    principal and API key a server starts with."""
    ids = {row["id"] for rows in own["snapshot"]["tables"].values() for row in rows}
    kept = copy.deepcopy(document)
    section = kept["snapshot"]
    section["tables"] = {
        name: [row for row in rows if row.get("id") not in ids]
        for name, rows in section["tables"].items()
    }
    section["left_out"] = [e for e in section["left_out"] if e["id"] not in ids]
    return kept


def _normalised(seen: dict[str, Any], base: str) -> str:
    return json.dumps(seen, sort_keys=True).replace(base, "BASE")


def test_a_world_moves_to_a_server_on_the_other_engine(settings, admin, tmp_path, other_engine):
    build_world(settings, admin, tmp_path)
    try:
        views(admin)  # settle certificate jobs before the snapshot
        document = snapshot(admin)
        sealed = snapshot(admin, include_secrets="true")
        before = views(admin)
    finally:
        admin.post("/_admin/reset")
    with TunnelgwServer(database_url=other_engine, certificate_issue_delay_seconds=0) as server:
        own = server.snapshot()
        # The secrets are sealed under the first server's key-encryption key: refused whole.
        with pytest.raises(TunnelgwError) as refused:
            server.load(sealed)
        assert refused.value.error_code == "ERR_INVALID_FIXTURE"
        assert "another key-encryption key" in str(refused.value.msg)
        assert comparable(server.snapshot()) == comparable(own)
        loaded = server.load(document)
        assert loaded["counts"]["tunnel"] == len(document["snapshot"]["tables"]["tunnel"])
        moved = server.snapshot()
        assert comparable(_without(moved, own)) == comparable(document)
        with server.client() as client:

            class Reader:
                def get(self, path: str) -> httpx.Response:
                    return client.get(path)

            after = views(Reader())
    # The same answers, but the new server's own key, and each uri's base.
    for seen in (before, after):
        for path in [p for p in seen if p.startswith("/api_keys")]:
            del seen[path]
    assert _normalised(after, server.base_url) == _normalised(before, "http://testserver")


SNAPSHOT_TESTS = """\
import json

import pytest
from tunnelgw.testing import TunnelgwError, TunnelgwServer


def test_save_a_world_and_load_it_back(tunnelgw):
    with tunnelgw.client() as client:
        domain = client.post("/reserved_domains", json={"domain": "snap.example.com"}).json()
        key = client.post("/api_keys", json={"description": "ci"}).json()
        saved = tunnelgw.snapshot()
        client.delete(f"/api_keys/{key['id']}")
        tunnelgw.reset()
        assert client.get("/reserved_domains").json()["reserved_domains"] == []
        tunnelgw.load(saved)
        assert client.get(f"/reserved_domains/{domain['id']}").json() == domain
        # Left out by default: the key is back, its token is not.
        notes = {(e["table"], e["id"]): e["effect"] for e in saved["snapshot"]["left_out"]}
        assert "401" in notes[("api_key", key["id"])]
        assert client.get("/api_keys", headers={"Authorization": f"Bearer {key['token']}"}
                          ).status_code == 401
    again = tunnelgw.snapshot()
    assert again["snapshot"]["tables"] == saved["snapshot"]["tables"]


def test_a_saved_file_loads_into_an_empty_account(tunnelgw, tmp_path):
    with tunnelgw.client() as client:
        client.post("/reserved_domains", json={"domain": "file.example.com"})
        saved = tmp_path / "world.json"
        saved.write_text(json.dumps(tunnelgw.snapshot()))
        with pytest.raises(TunnelgwError) as refused:
            tunnelgw.load(saved)
        assert refused.value.error_code == "ERR_INVALID_FIXTURE"
        assert "reset it first" in refused.value.msg
        tunnelgw.reset()
        assert tunnelgw.load(saved)["counts"]["reserved_domain"] == 1
        assert len(client.get("/reserved_domains").json()["reserved_domains"]) == 1


def test_secrets_go_along_on_the_same_server_only(tunnelgw):
    with tunnelgw.client() as client:
        ca = client.post("/ssh_certificate_authorities", json={"private_key_type": "ed25519"})
        ca = ca.json()
    sealed = tunnelgw.snapshot(include_secrets=True)
    tunnelgw.reset()
    tunnelgw.load(sealed)
    with TunnelgwServer() as elsewhere:
        with pytest.raises(TunnelgwError) as refused:
            elsewhere.load(sealed)
        assert "another key-encryption key" in refused.value.msg
"""


def test_a_child_pytest_saves_and_loads_a_world(kit: Kit, tmp_path):  # noqa: F811
    folder = tmp_path / "suite"
    folder.mkdir()
    (folder / "pytest.ini").write_text("[pytest]\nfilterwarnings = error\n")
    (folder / "test_snapshots.py").write_text(SNAPSHOT_TESTS)
    done = kit.pytest(folder)
    report = done.stdout + done.stderr
    assert done.returncode == 0, report
    assert "3 passed" in report, report
