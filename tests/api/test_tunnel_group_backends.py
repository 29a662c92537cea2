"""Tunnel group backends: /backends/tunnel_group (related-resources.md): `tunnels` are the
account's labeled tunnels whose labels include the backend's; the tunnels show the backends
back; `labels: {}` on update changes nothing; a backend a module uses cannot be deleted."""

from __future__ import annotations

import pytest

from tests.factories import assert_error
from tunnelgw.core import ids
from tunnelgw.models import Edge, EdgeRoute, Tunnel

PATH = "/backends/tunnel_group"
BASE = "http://testserver"


def _tunnel(factory, account_id: str, **labels: str) -> str:  # type: ignore[no-untyped-def]
    return factory.row(Tunnel, account_id, labels=labels).id  # type: ignore[no-any-return]


def _ids(refs: list[dict[str, str]]) -> list[str]:
    return [ref["id"] for ref in refs]


def test_create_get_list_update_delete(admin, factory):
    account = admin.creds.account_id
    web = _tunnel(factory, account, app="web", env="prod")
    web_staging = _tunnel(factory, account, app="web", env="staging")
    _tunnel(factory, account, app="db")
    _tunnel(factory, account)  # no labels: not a backend tunnel
    created = admin.post(PATH, json={"description": "web", "labels": {"app": "web"}})
    assert created.status_code == 201, created.text
    backend = created.json()
    assert set(backend) == {
        "id",
        "uri",
        "created_at",
        "description",
        "metadata",
        "labels",
        "tunnels",
    }
    assert backend["id"].startswith("bkdtg_")
    url = f"{PATH}/{backend['id']}"
    assert backend["uri"] == BASE + url
    assert backend["labels"] == {"app": "web"}
    assert backend["tunnels"] == [
        {"id": web, "uri": f"{BASE}/tunnels/{web}"},
        {"id": web_staging, "uri": f"{BASE}/tunnels/{web_staging}"},
    ]
    assert admin.get(url).json() == backend
    assert backend in admin.get(PATH).json()["backends"]
    tunnel = admin.get(f"/tunnels/{web}").json()
    assert tunnel["backends"] == [{"id": backend["id"], "uri": backend["uri"]}]

    narrowed = admin.patch(url, json={"labels": {"app": "web", "env": "prod"}}).json()
    assert _ids(narrowed["tunnels"]) == [web]
    assert admin.get(f"/tunnels/{web_staging}").json()["backends"] == []
    assert admin.get(url).json() == narrowed
    assert admin.delete(url).status_code == 204
    assert_error(admin.get(url), 404, "ERR_NOT_FOUND")
    assert admin.get(f"/tunnels/{web}").json()["backends"] == []


def test_a_backend_without_labels_groups_every_labeled_tunnel(admin, factory):
    account = admin.creds.account_id
    labeled = [_tunnel(factory, account, app="a"), _tunnel(factory, account, zone="b")]
    _tunnel(factory, account)
    backend = admin.post(PATH, json={"description": "", "metadata": "", "labels": {}}).json()
    assert _ids(backend["tunnels"]) == labeled
    assert backend["labels"] == {}


def test_labels_empty_on_update_change_nothing(admin, factory):
    """The Python client sends `"labels": {}` with every update."""
    web = _tunnel(factory, admin.creds.account_id, app="web")
    backend = admin.post(PATH, json={"labels": {"app": "web"}}).json()
    url = f"{PATH}/{backend['id']}"
    updated = admin.patch(url, json={"description": "d2", "labels": {}}).json()
    assert updated == {**backend, "description": "d2"}
    assert _ids(updated["tunnels"]) == [web]
    assert admin.patch(url, json={"labels": None}).json() == updated


def test_a_backend_in_use_cannot_be_deleted(admin, factory):
    backend = admin.post(PATH, json={"labels": {"app": "mqtt"}}).json()
    url = f"{PATH}/{backend['id']}"
    edge = admin.post("/edges/tls", json={"backend": {"backend_id": backend["id"]}}).json()
    error = assert_error(admin.delete(url), 409, "ERR_BACKEND_IN_USE")
    assert error["details"]["id"] == backend["id"]
    assert admin.delete(f"/edges/tls/{edge['id']}/backend").status_code == 204
    assert admin.delete(url).status_code == 204


@pytest.mark.parametrize(
    ("model", "fields"),
    [
        (Edge, {"kind": "tcp"}),
        (EdgeRoute, {"edge_id": "edghts_0ERZHb3hGoaYLY3tKA0JZBzonDJ"}),
    ],
)
def test_a_tcp_edge_or_route_module_counts_too(admin, factory, model, fields):
    backend = admin.post(PATH, json={}).json()
    prefix = "edgtcp" if model is Edge else model.PREFIX
    factory.row(
        model,
        admin.creds.account_id,
        id=ids.new_id(prefix),
        backend_id=backend["id"],
        backend_enabled=False,
        **fields,
    )
    assert_error(admin.delete(f"{PATH}/{backend['id']}"), 409, "ERR_BACKEND_IN_USE")


@pytest.mark.parametrize(
    ("body", "code", "field"),
    [
        ({"labels": {"bad key": "x"}}, "ERR_INVALID_FIELD", "labels.bad key"),
        ({"labels": {"a": 1}}, "ERR_WRONG_TYPE", "labels.a"),
        ({"labels": {"a": "x" * 256}}, "ERR_FIELD_TOO_LONG", "labels.a"),
        ({"labels": {"a": "line\nbreak"}}, "ERR_INVALID_FIELD", "labels.a"),
        ({"labels": {f"k{i}": "v" for i in range(65)}}, "ERR_FIELD_TOO_LONG", "labels"),
        ({"labels": []}, "ERR_WRONG_TYPE", "labels"),
        ({"tunnels": []}, "ERR_UNKNOWN_FIELD", "tunnels"),
        ({"description": "é" * 128}, "ERR_FIELD_TOO_LONG", "description"),
    ],
)
def test_invalid_bodies(admin, body, code, field):
    backend = admin.post(PATH, json={}).json()
    for method, url in (("POST", PATH), ("PATCH", f"{PATH}/{backend['id']}")):
        error = assert_error(admin.request(method, url, json=body), 400, code)
        assert error["details"]["field"] == field
    assert admin.get(PATH).json()["backends"] == [backend]


def test_list_pages_and_shows_each_backends_tunnels(admin, factory):
    account = admin.creds.account_id
    a, b = _tunnel(factory, account, app="a"), _tunnel(factory, account, app="b")
    made = [admin.post(PATH, json={"labels": {"app": app}}).json() for app in ("a", "b", "a")]
    first = admin.get(PATH, params={"limit": 2}).json()
    assert [(x["id"], _ids(x["tunnels"])) for x in first["backends"]] == [
        (made[2]["id"], [a]),
        (made[1]["id"], [b]),
    ]
    rest = admin.get(first["next_page_uri"].removeprefix(BASE)).json()
    assert rest["backends"] == [made[0]]
    tunnels = {t["id"]: t for t in admin.get("/tunnels").json()["tunnels"]}
    assert _ids(tunnels[a]["backends"]) == [made[0]["id"], made[2]["id"]]


def test_other_accounts_see_nothing(admin, other, factory):
    _tunnel(factory, other.creds.account_id, app="web")  # another account's tunnel
    backend = admin.post(PATH, json={"labels": {"app": "web"}}).json()
    assert backend["tunnels"] == []
    url = f"{PATH}/{backend['id']}"
    assert_error(other.get(url), 404, "ERR_NOT_FOUND")
    assert_error(other.patch(url, json={"description": "x"}), 404, "ERR_NOT_FOUND")
    assert_error(other.delete(url), 404, "ERR_NOT_FOUND")
    assert other.get(PATH).json()["backends"] == []
    error = assert_error(
        other.post("/edges/tls", json={"backend": {"backend_id": backend["id"]}}),
        404,
        "ERR_REFERENCE_NOT_FOUND",
    )
    assert error["details"]["field"] == "backend.backend_id"
