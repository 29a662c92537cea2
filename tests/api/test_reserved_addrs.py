"""Reserved TCP addresses: /reserved_addrs (related-resources.md): the address is assigned
from the TCP host pattern under the shared domain and the port range, once across accounts."""

from __future__ import annotations

import re
import uuid

import pytest

from tests.factories import assert_error
from tunnelgw.core import settings as tunnelgw_settings
from tunnelgw.models import ReservedAddr
from tunnelgw.services import reservations

PATH = "/reserved_addrs"
ADDR = re.compile(r"^(?P<region>[a-z]{2})\.tcp\.tunnelgw\.test:(?P<port>[0-9]+)$")


def test_create_get_list_update_delete(admin):
    created = admin.post(PATH, json={"description": "db", "metadata": "m", "region": "eu"})
    assert created.status_code == 201, created.text
    addr = created.json()
    assert set(addr) == {"id", "uri", "created_at", "description", "metadata", "addr", "region"}
    assert addr["id"].startswith("ra_")
    found = ADDR.fullmatch(addr["addr"])
    assert found is not None, addr["addr"]
    assert found["region"] == addr["region"] == "eu"
    assert 20000 <= int(found["port"]) <= 29999
    url = f"{PATH}/{addr['id']}"
    assert admin.get(url).json() == addr
    assert addr in admin.get(PATH).json()["reserved_addrs"]
    updated = admin.patch(url, json={"description": "postgres"}).json()
    assert updated == {**addr, "description": "postgres"}
    assert admin.delete(url).status_code == 204
    assert_error(admin.get(url), 404, "ERR_NOT_FOUND")


@pytest.mark.parametrize("body", [None, {}, {"region": ""}, {"region": None}])
def test_region_defaults_to_us(admin, body):
    kwargs = {} if body is None else {"json": body}
    addr = admin.post(PATH, **kwargs).json()
    assert addr["region"] == "us"
    assert addr["addr"].startswith("us.tcp.tunnelgw.test:")


def test_what_the_python_client_sends_is_accepted(admin):
    addr = admin.post(PATH, json={"description": "", "metadata": "", "region": ""}).json()
    assert (addr["description"], addr["region"]) == ("", "us")


@pytest.mark.parametrize(
    ("method", "body", "code", "field"),
    [
        ("POST", {"region": "mars"}, "ERR_INVALID_FIELD", "region"),
        ("POST", {"addr": "a.test:1"}, "ERR_UNKNOWN_FIELD", "addr"),
        ("PATCH", {"region": "eu"}, "ERR_UNKNOWN_FIELD", "region"),
        ("PATCH", {"addr": "a.test:1"}, "ERR_UNKNOWN_FIELD", "addr"),
        ("PATCH", {"metadata": "x" * 4097}, "ERR_FIELD_TOO_LONG", "metadata"),
    ],
)
def test_invalid_bodies(admin, method, body, code, field):
    addr = admin.post(PATH).json()
    url = PATH if method == "POST" else f"{PATH}/{addr['id']}"
    error = assert_error(admin.request(method, url, json=body), 400, code)
    assert error["details"]["field"] == field
    assert admin.get(PATH).json()["reserved_addrs"] == [addr]


@pytest.fixture
def small_range(monkeypatch):  # type: ignore[no-untyped-def]
    """Three ports on a host of this test alone (settings are read per request)."""
    host = f"t{uuid.uuid4().hex[:12]}"
    config = tunnelgw_settings.current()
    monkeypatch.setattr(config, "tcp_host_pattern", host)
    monkeypatch.setattr(config, "tcp_port_min", 40001)
    monkeypatch.setattr(config, "tcp_port_max", 40003)
    return f"{host}.tunnelgw.test"


@pytest.mark.inprocess
def test_addresses_are_unique_across_accounts_until_the_range_is_full(admin, other, small_range):
    made = [client.post(PATH).json() for client in (admin, other, admin)]
    assert sorted(a["addr"] for a in made) == [f"{small_range}:{p}" for p in (40001, 40002, 40003)]
    error = assert_error(other.post(PATH), 409, "ERR_NO_FREE_ADDRESS")
    assert error["details"]["host"] == small_range
    assert admin.delete(f"{PATH}/{made[0]['id']}").status_code == 204
    again = other.post(PATH).json()  # the released address is free again, for anyone
    assert again["addr"] == made[0]["addr"]


@pytest.mark.inprocess
def test_a_concurrent_reservation_of_the_same_port_is_a_conflict(admin, small_range, monkeypatch):
    first = admin.post(PATH).json()
    port = int(first["addr"].rpartition(":")[2])

    async def same_port(*_args: object) -> int:
        return port  # as if another request had taken it since the check

    monkeypatch.setattr(reservations, "free_port", same_port)
    assert_error(admin.post(PATH), 409, "ERR_CONFLICT")
    assert [a["id"] for a in admin.get(PATH).json()["reserved_addrs"]] == [first["id"]]


def test_list_pages_newest_first(admin):
    made = [admin.post(PATH).json()["id"] for _ in range(3)]
    first = admin.get(PATH, params={"limit": 2}).json()
    assert [a["id"] for a in first["reserved_addrs"]] == [made[2], made[1]]
    rest = admin.get(PATH, params={"limit": 2, "before_id": made[1]}).json()
    assert ([a["id"] for a in rest["reserved_addrs"]], rest["next_page_uri"]) == ([made[0]], None)


def test_other_accounts_see_nothing(admin, other, factory):
    addr = admin.post(PATH).json()
    url = f"{PATH}/{addr['id']}"
    assert_error(other.get(url), 404, "ERR_NOT_FOUND")
    assert_error(other.patch(url, json={"description": "x"}), 404, "ERR_NOT_FOUND")
    assert_error(other.delete(url), 404, "ERR_NOT_FOUND")
    assert other.get(PATH).json()["reserved_addrs"] == []

    async def rows(unit):  # type: ignore[no-untyped-def]
        return await unit.get(ReservedAddr, addr["id"])

    assert factory.query(rows).addr == addr["addr"]
