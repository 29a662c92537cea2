"""HTTPS edges: /edges/https (related-resources.md), read-only (rows from fixtures, here
Factory.row), each with its routes; the modules not modelled are null."""

from __future__ import annotations

from tests.factories import assert_error
from tunnelgw.core import ids
from tunnelgw.models import Edge, EdgeRoute

PATH = "/edges/https"
BASE = "http://testserver"


def _edge(factory, account_id: str, **fields):  # type: ignore[no-untyped-def]
    return factory.row(Edge, account_id, id=ids.new_id("edghts"), kind="https", **fields)


def test_get_and_list_with_routes(admin, factory):
    account = admin.creds.account_id
    edge = _edge(factory, account, description="web", hostports=["app.example.com:443"])
    backend = admin.post("/backends/tunnel_group", json={}).json()
    routes = [
        factory.row(EdgeRoute, account, edge_id=edge.id, match="/", description="root"),
        factory.row(
            EdgeRoute,
            account,
            edge_id=edge.id,
            match="/api",
            match_type="exact_path",
            backend_id=backend["id"],
            backend_enabled=False,
        ),
    ]
    other_edge = _edge(factory, account)
    shown = admin.get(f"{PATH}/{edge.id}").json()
    assert set(shown) == {
        "id",
        "uri",
        "created_at",
        "description",
        "metadata",
        "hostports",
        "mutual_tls",
        "tls_termination",
        "routes",
    }
    assert (shown["uri"], shown["hostports"]) == (
        f"{BASE}{PATH}/{edge.id}",
        ["app.example.com:443"],
    )
    assert (shown["mutual_tls"], shown["tls_termination"]) == (None, None)
    assert [r["id"] for r in shown["routes"]] == [r.id for r in routes]  # oldest first
    assert [r["match_type"] for r in shown["routes"]] == ["path_prefix", "exact_path"]
    assert shown["routes"][1]["backend"] == {
        "enabled": False,
        "backend": {"id": backend["id"], "uri": backend["uri"]},
    }
    for route in shown["routes"]:
        assert admin.get(route["uri"].removeprefix(BASE)).json() == route
    listed = admin.get(PATH).json()["https_edges"]
    assert listed == [admin.get(f"{PATH}/{other_edge.id}").json(), shown]
    assert listed[0]["routes"] == []


def test_only_https_edges_are_listed(admin, factory):
    account = admin.creds.account_id
    factory.row(Edge, account, id=ids.new_id("edgtcp"), kind="tcp")
    admin.post("/edges/tls", json={})
    edge = _edge(factory, account)
    assert [e["id"] for e in admin.get(PATH).json()["https_edges"]] == [edge.id]


def test_list_pages_newest_first(admin, factory):
    made = [_edge(factory, admin.creds.account_id).id for _ in range(3)]
    first = admin.get(PATH, params={"limit": 2}).json()
    assert [e["id"] for e in first["https_edges"]] == [made[2], made[1]]
    rest = admin.get(first["next_page_uri"].removeprefix(BASE)).json()
    assert ([e["id"] for e in rest["https_edges"]], rest["next_page_uri"]) == ([made[0]], None)


def test_read_only_and_tenant_isolation(admin, other, factory):
    edge = _edge(factory, admin.creds.account_id)
    url = f"{PATH}/{edge.id}"
    assert_error(other.get(url), 404, "ERR_NOT_FOUND")
    assert other.get(PATH).json()["https_edges"] == []
    assert_error(admin.get(f"{PATH}/{ids.new_id('edgtls')}"), 400, "ERR_INVALID_PARAMETER")
    assert_error(admin.post(PATH, json={}), 405, "ERR_METHOD_NOT_ALLOWED")
    assert_error(admin.patch(url, json={}), 405, "ERR_METHOD_NOT_ALLOWED")
