"""Issue 23: account snapshots (`GET /_admin/snapshot`): an account's whole state as a fixture
document, loaded back (`POST /_admin/fixtures`) with the same ids and fields."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.creates import CREATES
from tests.factories import assert_error
from tunnelgw.core.spec import load as load_spec
from tunnelgw import fixtures

EXAMPLE = Path(__file__).resolve().parents[2] / "fixtures" / "example.yaml"


def snapshot(client: Any, **params: Any) -> dict[str, Any]:
    response = client.get("/_admin/snapshot", params=params)
    assert response.status_code == 200, response.text
    document: dict[str, Any] = response.json()
    return document


def comparable(document: dict[str, Any]) -> bytes:
    """The document as bytes (sorted keys), without what describes the export itself."""
    section = {
        k: v
        for k, v in document["snapshot"].items()
        if k not in ("taken_at", "source_account_id")
    }
    return orjson.dumps(section, option=orjson.OPT_SORT_KEYS)


def build_world(settings: Any, client: Any, tmp_path: Path) -> dict[str, Any]:
    """The example fixture (every read-only kind) and one of every create; the tokens of
    the API key and tunnel credential made."""
    fixtures.load(EXAMPLE, settings, client.creds.account_id)
    made: dict[str, Any] = {}
    for operation, create in CREATES.items():
        response = create.post(client, tmp_path)
        assert response.status_code == 201, (operation, response.text)
        made[operation] = response.json()
    return made


def views(client: Any) -> dict[str, Any]:
    """What every list operation (without path parameters) answers, and each item's GET."""
    seen: dict[str, Any] = {}
    for path, operations in load_spec()["paths"].items():
        get = operations.get("get")
        if get is None or "security" in get or "{" in path or "admin" in get["tags"]:
            continue
        body = client.get(path).json()
        seen[path] = body
        for items in (v for v in body.values() if isinstance(v, list)):
            for item in items:
                if isinstance(item, dict) and "id" in item and f"{path}/{{id}}" in load_spec()["paths"]:
                    seen[f"{path}/{item['id']}"] = client.get(f"{path}/{item['id']}").json()
    return seen


@pytest.fixture
def world(settings, admin, tmp_path):
    made = build_world(settings, admin, tmp_path)
    yield made
    admin.post("/_admin/reset")


def test_export_reset_load_export_gives_the_same_document(admin, world):
    views(admin)  # reads complete certificate jobs: settle them before the snapshot
    first = snapshot(admin)
    before = views(admin)
    assert comparable(snapshot(admin)) == comparable(first)  # byte-identical
    admin.post("/_admin/reset")
    loaded = admin.post("/_admin/fixtures", json=first)
    assert loaded.status_code == 200, loaded.text
    again = snapshot(admin)
    assert comparable(again) == comparable(first)
    assert views(admin) == before
