"""Endpoints: /endpoints (spec 4.9): agent endpoints, whose rows are made by Factory.row
(cloud endpoints: tests/api/test_cloud_endpoints.py)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from tests.factories import assert_error
from tunnelgw.models import Endpoint

PATH = "/endpoints"
BASE = "http://testserver"


def _endpoint(factory, account_id: str, **fields):  # type: ignore[no-untyped-def]
    values = {
        "proto": "https",
        "hostport": "app.example.com:443",
        "public_url": "https://app.example.com",
        "type": "ephemeral",
        **fields,
    }
    return factory.row(Endpoint, account_id, **values)


def test_edge_endpoint_renders_every_field(admin, factory):
    created = datetime(2026, 11, 21, 10, 11, 14, 750_000, tzinfo=UTC)
    row = _endpoint(
        factory,
        admin.creds.account_id,
        region="eu",
        created_at=created,
        updated_at=datetime(2026, 11, 22, 8, 0, 0, tzinfo=UTC),
        proto="tls",
        hostport="secure.example.com:443",
        public_url="tls://secure.example.com",
        type="edge",
        meta='{"team": "web"}',
        reserved_domain_id="rd_0ERZHb3h9qLJ2PbQVel0iN6pagQ",
        edge_id="edgtls_0ERZHb3hCJfGRVvOGK8lSdAv8vQ",
    )
    got = admin.get(f"{PATH}/{row.id}")
    assert got.status_code == 200, got.text
    assert got.json() == {
        "id": row.id,
        "uri": f"{BASE}{PATH}/{row.id}",
        "region": "eu",
        "created_at": "2026-11-21T10:11:14Z",
        "updated_at": "2026-11-22T08:00:00Z",
        "public_url": "tls://secure.example.com",
        "proto": "tls",
        "hostport": "secure.example.com:443",
        "type": "edge",
        "metadata": '{"team": "web"}',
        "domain": {
            "id": "rd_0ERZHb3h9qLJ2PbQVel0iN6pagQ",
            "uri": f"{BASE}/reserved_domains/rd_0ERZHb3h9qLJ2PbQVel0iN6pagQ",
        },
        "tcp_addr": None,
        "tunnel": None,
        "edge": {
            "id": "edgtls_0ERZHb3hCJfGRVvOGK8lSdAv8vQ",
            "uri": f"{BASE}/edges/tls/edgtls_0ERZHb3hCJfGRVvOGK8lSdAv8vQ",
        },
        # The fields current client libraries read (tests/api/test_newer_fields.py).
        "url": "tls://secure.example.com",
        "scheme": "tls",
        "host": "secure.example.com",
        "port": 443,
        "name": "",
        "description": "",
        "upstream_url": "",
        "upstream_protocol": "",
        "principal": None,
        "traffic_policy": "",
        "bindings": ["public"],
        "tunnel_session": None,
        "pooling_enabled": False,
    }


def test_ephemeral_tcp_endpoint_has_tunnel_and_address(admin, factory):
    row = _endpoint(
        factory,
        admin.creds.account_id,
        proto="tcp",
        hostport="1.tcp.example.com:20123",
        public_url="tcp://1.tcp.example.com:20123",
        reserved_addr_id="ra_0ERZHb3h9qLJ2PbQVel0iN6pagR",
        tunnel_id="tn_0ERZHb3hBy9jV2cEqNZPZThppyg",
    )
    got = admin.get(f"{PATH}/{row.id}").json()
    assert (got["type"], got["proto"], got["region"], got["metadata"]) == (
        "ephemeral",
        "tcp",
        "us",
        "",
    )
    assert got["tcp_addr"] == {
        "id": "ra_0ERZHb3h9qLJ2PbQVel0iN6pagR",
        "uri": f"{BASE}/reserved_addrs/ra_0ERZHb3h9qLJ2PbQVel0iN6pagR",
    }
    assert got["tunnel"] == {
        "id": "tn_0ERZHb3hBy9jV2cEqNZPZThppyg",
        "uri": f"{BASE}/tunnels/tn_0ERZHb3hBy9jV2cEqNZPZThppyg",
    }
    assert (got["domain"], got["edge"]) == (None, None)


@pytest.mark.parametrize("kind", ["https", "tcp", "tls"])
def test_edge_uri_follows_the_edge_kind(admin, factory, kind):
    prefix = {"https": "edghts", "tcp": "edgtcp", "tls": "edgtls"}[kind]
    edge_id = f"{prefix}_0ERZHb3hCJfGRVvOGK8lSdAv8vQ"
    row = _endpoint(factory, admin.creds.account_id, type="edge", edge_id=edge_id)
    got = admin.get(f"{PATH}/{row.id}").json()
    assert got["edge"] == {"id": edge_id, "uri": f"{BASE}/edges/{kind}/{edge_id}"}


def test_list_pages(admin, factory):
    made = [_endpoint(factory, admin.creds.account_id).id for _ in range(3)]
    everything = admin.get(PATH).json()
    assert [e["id"] for e in everything["endpoints"]] == made[::-1]
    assert (everything["uri"], everything["next_page_uri"]) == (f"{BASE}{PATH}", None)
    first = admin.get(PATH, params={"limit": 2}).json()
    assert [e["id"] for e in first["endpoints"]] == made[::-1][:2]
    assert first["next_page_uri"] == f"{BASE}{PATH}?limit=2&before_id={made[1]}"
    second = admin.get(first["next_page_uri"].removeprefix(BASE)).json()
    assert [e["id"] for e in second["endpoints"]] == [made[0]]
    assert second["next_page_uri"] is None
    alias = admin.get(PATH, params={"beforeId": made[2]}).json()
    assert [e["id"] for e in alias["endpoints"]] == made[1::-1]
    wrong_prefix = made[0].replace("ep_", "ak_", 1)
    assert_error(admin.get(PATH, params={"before_id": wrong_prefix}), 400, "ERR_INVALID_PARAMETER")


def test_accounts_are_isolated(admin, other, factory):
    row = _endpoint(factory, admin.creds.account_id)
    assert_error(other.get(f"{PATH}/{row.id}"), 404, "ERR_NOT_FOUND")
    assert other.get(PATH).json()["endpoints"] == []
    assert admin.get(f"{PATH}/{row.id}").status_code == 200


def test_unknown_id(admin):
    url = f"{PATH}/ep_0ERZHb3h9qLJ2PbQVel0iN6pagP"
    assert_error(admin.get(url), 404, "ERR_NOT_FOUND")
    assert_error(admin.patch(url, json={"description": "x"}), 404, "ERR_NOT_FOUND")
    assert_error(admin.delete(url), 404, "ERR_NOT_FOUND")
