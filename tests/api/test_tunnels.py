"""Tunnels: /tunnels (related-resources.md), read-only: rows come from fixtures (here
Factory.row); the backends a labeled tunnel serves; no created_at, no description."""

from __future__ import annotations

from datetime import UTC, datetime

from tests.factories import assert_error
from tunnelgw.core import ids
from tunnelgw.models import Endpoint, Tunnel

PATH = "/tunnels"
BASE = "http://testserver"


def test_get_and_list(admin, factory):
    account = admin.creds.account_id
    endpoint = factory.row(
        Endpoint,
        account,
        proto="tcp",
        hostport="1.tcp.example.test:20001",
        public_url="tcp://1.tcp.example.test:20001",
        type="ephemeral",
    )
    tunnel = factory.row(
        Tunnel,
        account,
        description="not shown",
        meta='{"host": "db-01"}',
        public_url="tcp://1.tcp.example.test:20001",
        started_at=datetime(2026, 5, 6, 7, 8, 9, tzinfo=UTC),
        proto="tcp",
        region="eu",
        forwards_to="localhost:5432",
        endpoint_id=endpoint.id,
    )
    shown = admin.get(f"{PATH}/{tunnel.id}").json()
    assert shown == {
        "id": tunnel.id,
        "uri": f"{BASE}{PATH}/{tunnel.id}",
        "public_url": "tcp://1.tcp.example.test:20001",
        "started_at": "2026-05-06T07:08:09Z",
        "metadata": '{"host": "db-01"}',
        "proto": "tcp",
        "region": "eu",
        "tunnel_session": None,
        "endpoint": {"id": endpoint.id, "uri": f"{BASE}/endpoints/{endpoint.id}"},
        "labels": {},
        "backends": [],
        "forwards_to": "localhost:5432",
    }
    assert admin.get(shown["endpoint"]["uri"].removeprefix(BASE)).status_code == 200
    assert admin.get(PATH).json() == {
        "tunnels": [shown],
        "uri": f"{BASE}{PATH}",
        "next_page_uri": None,
    }


def test_a_labeled_tunnel_shows_the_backends_it_serves(admin, factory):
    tunnel = factory.row(Tunnel, admin.creds.account_id, labels={"app": "web", "env": "prod"})
    groups = [
        admin.post("/backends/tunnel_group", json={"labels": labels}).json()
        for labels in ({"app": "web"}, {"env": "prod"}, {"app": "db"}, {})
    ]
    shown = admin.get(f"{PATH}/{tunnel.id}").json()
    assert shown["labels"] == {"app": "web", "env": "prod"}
    assert shown["backends"] == [
        {"id": g["id"], "uri": g["uri"]} for g in (groups[0], groups[1], groups[3])
    ]
    assert shown["public_url"] == ""  # a labeled tunnel has none


def test_list_pages_newest_first(admin, factory):
    made = [factory.row(Tunnel, admin.creds.account_id).id for _ in range(3)]
    first = admin.get(PATH, params={"limit": 2}).json()
    assert [t["id"] for t in first["tunnels"]] == [made[2], made[1]]
    rest = admin.get(first["next_page_uri"].removeprefix(BASE)).json()
    assert ([t["id"] for t in rest["tunnels"]], rest["next_page_uri"]) == ([made[0]], None)


def test_read_only_and_tenant_isolation(admin, other, factory):
    tunnel = factory.row(Tunnel, admin.creds.account_id)
    url = f"{PATH}/{tunnel.id}"
    assert_error(other.get(url), 404, "ERR_NOT_FOUND")
    assert other.get(PATH).json()["tunnels"] == []
    assert_error(admin.get(f"{PATH}/{ids.new_id('tn')}"), 404, "ERR_NOT_FOUND")
    assert_error(admin.post(PATH, json={}), 405, "ERR_METHOD_NOT_ALLOWED")
    assert_error(admin.delete(url), 405, "ERR_METHOD_NOT_ALLOWED")
    assert_error(admin.get(PATH, params={"before_id": "tn_x"}), 400, "ERR_INVALID_PARAMETER")
