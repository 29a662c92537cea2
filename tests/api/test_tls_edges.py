"""TLS edges: /edges/tls (related-resources.md): hostports, and the backend module that is
the same data as /edges/tls/{id}/backend; the modules not modelled are null."""

from __future__ import annotations

import pytest

from tests.factories import assert_error
from tunnelgw.core import ids
from tunnelgw.models import Edge

PATH = "/edges/tls"
BASE = "http://testserver"
NULL_MODULES = ("ip_restriction", "mutual_tls", "tls_termination", "traffic_policy")


@pytest.fixture
def backend(admin) -> dict[str, str]:  # type: ignore[no-untyped-def]
    return admin.post("/backends/tunnel_group", json={"labels": {"app": "mqtt"}}).json()


def test_create_get_list_update_delete(admin, backend):
    created = admin.post(
        PATH,
        json={
            "description": "mqtt",
            "metadata": "m",
            "hostports": ["mqtt.example.com:443", "*.mqtt.example.com:8883"],
            "backend": {"backend_id": backend["id"]},
        },
    )
    assert created.status_code == 201, created.text
    edge = created.json()
    assert set(edge) == {
        "id",
        "uri",
        "created_at",
        "description",
        "metadata",
        "hostports",
        "backend",
        *NULL_MODULES,
    }
    assert edge["id"].startswith("edgtls_")
    url = f"{PATH}/{edge['id']}"
    assert edge["uri"] == BASE + url
    assert edge["hostports"] == ["mqtt.example.com:443", "*.mqtt.example.com:8883"]
    assert edge["backend"] == {
        "enabled": True,
        "backend": {"id": backend["id"], "uri": backend["uri"]},
    }
    assert all(edge[name] is None for name in NULL_MODULES)
    assert admin.get(url).json() == edge
    assert edge in admin.get(PATH).json()["tls_edges"]
    updated = admin.patch(url, json={"description": "renamed", "hostports": []}).json()
    assert updated == {**edge, "description": "renamed", "hostports": []}
    assert admin.delete(url).status_code == 204
    assert_error(admin.get(url), 404, "ERR_NOT_FOUND")
    assert_error(admin.get(f"{url}/backend"), 404, "ERR_NOT_FOUND")
    assert admin.get(backend["uri"].removeprefix(BASE)).status_code == 200  # kept


def test_what_the_python_client_sends_is_accepted(admin, backend):
    bare = admin.post(PATH, json={"description": "", "metadata": ""}).json()
    assert (bare["hostports"], bare["backend"]) == ([], None)
    module = {"enabled": True, "backend_id": backend["id"]}
    full = admin.post(PATH, json={"hostports": ["a.example.com:443"], "backend": module}).json()
    assert full["backend"]["backend"]["id"] == backend["id"]


def test_the_backend_field_is_the_backend_module(admin, backend):
    edge = admin.post(PATH, json={}).json()
    url = f"{PATH}/{edge['id']}"
    assert_error(admin.get(f"{url}/backend"), 404, "ERR_BACKEND_MODULE_NOT_SET")
    # set through the module operation, seen on the edge
    put = admin.put(f"{url}/backend", json={"backend_id": backend["id"], "enabled": False})
    assert admin.get(url).json()["backend"] == put.json()
    # set through the edge, seen by the module operation
    other = admin.post("/backends/tunnel_group", json={}).json()
    patched = admin.patch(url, json={"backend": {"backend_id": other["id"]}}).json()
    assert patched["backend"] == admin.get(f"{url}/backend").json()
    assert patched["backend"] == {
        "enabled": True,
        "backend": {"id": other["id"], "uri": other["uri"]},
    }
    # a PATCH without `backend` keeps it; removing it through the module operation
    assert admin.patch(url, json={"backend": None}).json()["backend"] == patched["backend"]
    assert admin.delete(f"{url}/backend").status_code == 204
    assert admin.get(url).json()["backend"] is None


@pytest.mark.parametrize(
    ("body", "code", "field"),
    [
        ({"hostports": ["example.com"]}, "ERR_INVALID_FIELD", "hostports.0"),
        ({"hostports": ["example.com:0"]}, "ERR_INVALID_FIELD", "hostports.0"),
        ({"hostports": ["example.com:65536"]}, "ERR_INVALID_FIELD", "hostports.0"),
        ({"hostports": ["exa mple.com:443"]}, "ERR_INVALID_FIELD", "hostports.0"),
        ({"hostports": ["a.com:443", "a.com:443"]}, "ERR_INVALID_FIELD", "hostports"),
        ({"hostports": "a.com:443"}, "ERR_WRONG_TYPE", "hostports"),
        ({"backend": {}}, "ERR_MISSING_FIELD", "backend.backend_id"),
        (
            {"backend": {"backend_id": "bkdhr_0ERZHb3hGoaYLY3tKA0JZBzonDJ"}},
            "ERR_INVALID_FIELD",
            "backend.backend_id",
        ),
        ({"backend": {"backend_id": "x", "other": 1}}, "ERR_UNKNOWN_FIELD", "backend.other"),
        ({"mutual_tls": None}, "ERR_UNKNOWN_FIELD", "mutual_tls"),
        ({"traffic_policy": "on_tcp_connect: []"}, "ERR_UNKNOWN_FIELD", "traffic_policy"),
        ({"description": "é" * 128}, "ERR_FIELD_TOO_LONG", "description"),
    ],
)
def test_invalid_bodies(admin, body, code, field):
    edge = admin.post(PATH, json={}).json()
    for method, url in (("POST", PATH), ("PATCH", f"{PATH}/{edge['id']}")):
        error = assert_error(admin.request(method, url, json=body), 400, code)
        assert error["details"]["field"] == field
    assert admin.get(PATH).json()["tls_edges"] == [edge]


def test_hostports_take_every_valid_port(admin):
    ports = ["a.example.com:1", "a.example.com:65535", "localhost:8883", "*.b.example.com:443"]
    assert admin.post(PATH, json={"hostports": ports}).json()["hostports"] == ports


def test_unknown_or_foreign_backend_is_a_missing_reference(admin, other):
    theirs = other.post("/backends/tunnel_group", json={}).json()
    edge = admin.post(PATH, json={}).json()
    for backend_id in (theirs["id"], "bkdtg_0ERZHb3hGoaYLY3tKA0JZBzonDJ"):
        body = {"backend": {"backend_id": backend_id}}
        for method, url in (("POST", PATH), ("PATCH", f"{PATH}/{edge['id']}")):
            error = assert_error(
                admin.request(method, url, json=body), 404, "ERR_REFERENCE_NOT_FOUND"
            )
            assert error["details"]["field"] == "backend.backend_id"
    assert admin.get(PATH).json()["tls_edges"] == [edge]


def test_edges_of_other_kinds_are_not_listed_or_found(admin, factory):
    account = admin.creds.account_id
    https = factory.row(Edge, account, id=ids.new_id("edghts"), kind="https")
    tcp = factory.row(Edge, account, id=ids.new_id("edgtcp"), kind="tcp")
    mine = admin.post(PATH, json={}).json()
    assert [e["id"] for e in admin.get(PATH).json()["tls_edges"]] == [mine["id"]]
    assert_error(admin.get(f"{PATH}/{https.id}"), 400, "ERR_INVALID_PARAMETER")
    assert [e["id"] for e in admin.get("/edges/tcp").json()["tcp_edges"]] == [tcp.id]
    # a row of another kind under a TLS id (only a broken fixture could make it): not found
    odd = factory.row(Edge, account, id=ids.new_id("edgtls"), kind="tcp")
    assert_error(admin.get(f"{PATH}/{odd.id}"), 404, "ERR_NOT_FOUND")
    assert_error(admin.patch(f"{PATH}/{odd.id}", json={}), 404, "ERR_NOT_FOUND")


def test_list_pages_newest_first(admin):
    made = [admin.post(PATH, json={}).json()["id"] for _ in range(3)]
    first = admin.get(PATH, params={"limit": 2}).json()
    assert [e["id"] for e in first["tls_edges"]] == [made[2], made[1]]
    assert first["next_page_uri"] == f"{BASE}{PATH}?limit=2&before_id={made[1]}"
    rest = admin.get(first["next_page_uri"].removeprefix(BASE)).json()
    assert ([e["id"] for e in rest["tls_edges"]], rest["next_page_uri"]) == ([made[0]], None)
    assert_error(
        admin.get(PATH, params={"before_id": made[0].replace("edgtls", "edgtcp")}),
        400,
        "ERR_INVALID_PARAMETER",
    )


def test_other_accounts_see_nothing(admin, other, backend):
    edge = admin.post(PATH, json={"backend": {"backend_id": backend["id"]}}).json()
    url = f"{PATH}/{edge['id']}"
    assert_error(other.get(url), 404, "ERR_NOT_FOUND")
    assert_error(other.patch(url, json={"description": "x"}), 404, "ERR_NOT_FOUND")
    assert_error(other.delete(url), 404, "ERR_NOT_FOUND")
    assert other.get(PATH).json()["tls_edges"] == []
    assert admin.get(url).json() == edge
