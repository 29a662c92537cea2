"""TCP edges: /edges/tcp (related-resources.md), read-only (rows from fixtures, here
Factory.row), with the backend module; the modules not modelled are null."""

from __future__ import annotations

from tests.factories import assert_error
from tunnelgw.core import ids
from tunnelgw.models import Edge

PATH = "/edges/tcp"
BASE = "http://testserver"


def _edge(factory, account_id: str, **fields):  # type: ignore[no-untyped-def]
    return factory.row(Edge, account_id, id=ids.new_id("edgtcp"), kind="tcp", **fields)


def test_get_and_list(admin, factory):
    backend = admin.post("/backends/tunnel_group", json={}).json()
    edge = _edge(
        factory,
        admin.creds.account_id,
        hostports=["1.tcp.example.test:20001"],
        backend_id=backend["id"],
        backend_enabled=True,
    )
    bare = _edge(factory, admin.creds.account_id)
    shown = admin.get(f"{PATH}/{edge.id}").json()
    assert shown == {
        "id": edge.id,
        "uri": f"{BASE}{PATH}/{edge.id}",
        "created_at": shown["created_at"],
        "description": "",
        "metadata": "",
        "hostports": ["1.tcp.example.test:20001"],
        "backend": {"enabled": True, "backend": {"id": backend["id"], "uri": backend["uri"]}},
        "ip_restriction": None,
        "traffic_policy": None,
    }
    listed = admin.get(PATH).json()
    assert [e["id"] for e in listed["tcp_edges"]] == [bare.id, edge.id]
    assert listed["tcp_edges"][0]["backend"] is None
    first = admin.get(PATH, params={"limit": 1}).json()
    assert first["next_page_uri"] == f"{BASE}{PATH}?limit=1&before_id={bare.id}"


def test_read_only_and_tenant_isolation(admin, other, factory):
    edge = _edge(factory, admin.creds.account_id)
    url = f"{PATH}/{edge.id}"
    assert_error(other.get(url), 404, "ERR_NOT_FOUND")
    assert other.get(PATH).json()["tcp_edges"] == []
    assert_error(admin.get(f"{PATH}/{ids.new_id('edgtcp')}"), 404, "ERR_NOT_FOUND")
    assert_error(admin.post(PATH, json={}), 405, "ERR_METHOD_NOT_ALLOWED")
    assert_error(admin.delete(url), 405, "ERR_METHOD_NOT_ALLOWED")
