"""Issue 10, item 6: `filter` on every list (the documented CEL subset, evaluated against each
item as the response shows it), keyset paging that keeps the filter, a bounded scan, each
filter error code, and the endpoint list's exact-match id/url/ids/urls."""

from __future__ import annotations

import uuid
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.factories import assert_error
from tunnelgw.core import ids
from tunnelgw.core.spec import load as load_spec
from tunnelgw.models import Endpoint, EventSubscription
from tunnelgw.services import listing

SPEC = load_spec()
# The operator's list of the server's accounts (admin API) is no list of an account's
# resources, and the platform's API has none: it pages, it does not filter.
UNFILTERED = {"/_admin/accounts"}
LISTS = sorted(
    path
    for path, item in SPEC["paths"].items()
    if "get" in item
    and any(p.get("$ref", "").endswith("BeforeId") for p in item["get"].get("parameters", []))
    and path not in UNFILTERED
)


def _local(uri: str) -> str:
    return uri.removeprefix("http://testserver")


def _keys(admin, n: int, prefix: str) -> list[str]:
    made = []
    for i in range(n):
        made.append(admin.post("/api_keys", json={"description": f"{prefix}{i}"}).json()["id"])
    return made


def _walk(admin, uri: str) -> tuple[list[dict], int]:
    """Every item over all pages, and the number of pages."""
    items, pages = [], 0
    while uri is not None:
        page = admin.get(_local(uri)).json()
        pages += 1
        items += page[next(k for k in page if k not in ("uri", "next_page_uri"))]
        uri = page["next_page_uri"]
        assert pages < 1000
    return items, pages


def test_every_list_declares_filter():
    for path in LISTS:
        names = [p["$ref"].rsplit("/", 1)[-1] for p in SPEC["paths"][path]["get"]["parameters"]]
        assert "Filter" in names, path
    sources = SPEC["paths"]["/event_subscriptions/{subscription_id}/sources"]["get"]
    assert sources["parameters"] == [{"$ref": "#/components/parameters/Filter"}]


def _list_url(admin, path: str) -> str:
    """`path` with its `{id}` (a list under one resource: a vault's secrets) filled in."""
    if path == "/vaults/{id}/secrets":
        vault = admin.post("/vaults", json={"name": "filtered"}).json()
        admin.post("/vault_secrets", json={"vault_id": vault["id"], "name": "s", "value": "v"})
        return path.format(id=vault["id"])
    return path


# Lists under one resource: how to make the resource whose id fills the path.
PARENTS = {"/kubernetes_operators/{id}/bound_endpoints": "/kubernetes_operators"}


@pytest.mark.parametrize("path", LISTS)
def test_every_list_takes_a_filter(admin, path):
    if path in PARENTS:
        path = path.format(id=admin.post(PARENTS[path], json={}).json()["id"])
    path = _list_url(admin, path)
    response = admin.get(path, params={"filter": 'obj.id != ""'})
    assert response.status_code == 200, response.text
    none = admin.get(path, params={"filter": 'obj.id == "nothing"'})
    body = none.json()
    assert body["next_page_uri"] is None
    assert all(not v for k, v in body.items() if k not in ("uri", "next_page_uri"))


def test_filter_selects_and_pages_keep_it(admin):
    tag = uuid.uuid4().hex[:6]
    made = _keys(admin, 7, f"{tag}-a")
    _keys(admin, 3, f"{tag}-b")
    expression = f'obj.description.startsWith("{tag}-a")'
    first = admin.get("/api_keys", params={"filter": expression, "limit": 3}).json()
    assert [k["id"] for k in first["keys"]] == made[::-1][:3]
    query = parse_qs(urlsplit(first["next_page_uri"]).query)
    assert query["filter"] == [expression]
    assert query["limit"] == ["3"]
    assert query["before_id"] == [made[-3]]
    items, pages = _walk(admin, first["uri"] + "?" + urlsplit(first["next_page_uri"]).query)
    everything, _ = _walk(admin, f"http://testserver/api_keys?limit=3&filter={expression}")
    assert [k["id"] for k in everything] == made[::-1]
    # The last page looks ahead: no empty page at the end.
    last = admin.get("/api_keys", params={"filter": expression, "limit": 7}).json()
    assert len(last["keys"]) == 7
    assert last["next_page_uri"] is None
    assert pages == 2
    assert len(items) == 4


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ('obj.description == "x1"', ["x1"]),
        ('obj.description in ["x0", "x2"]', ["x2", "x0"]),
        ('!(obj.description == "x1") && obj.description.endsWith("2")', ["x2"]),
        ('obj.description.contains("1") || obj.description == "x0"', ["x1", "x0"]),
        ('size(obj.description) == 2 && obj.metadata == ""', ["x2", "x1", "x0"]),
        ('obj.created_at > timestamp("2000-01-01T00:00:00Z")', ["x2", "x1", "x0"]),
        ('obj.created_at >= timestamp(time.now).subtract("1h")', ["x2", "x1", "x0"]),
        ('obj.created_at > timestamp(time.now).add("1d")', []),
        ("obj.token == null", ["x2", "x1", "x0"]),
        ('obj.owner_id.startsWith("usr_")', ["x2", "x1", "x0"]),
    ],
)
def test_the_documented_subset(admin, expression, expected):
    _keys(admin, 3, "x")
    guarded = f'({expression}) && obj.description.startsWith("x")'
    keys = admin.get("/api_keys", params={"filter": guarded})
    assert keys.status_code == 200, keys.text
    assert [k["description"] for k in keys.json()["keys"]] == expected


def test_nested_refs_and_null_refs(admin, factory):
    rd = admin.post("/reserved_domains", json={"domain": f"f{uuid.uuid4().hex[:10]}.example.com"})
    managed = admin.post(
        "/reserved_domains",
        json={
            "domain": f"g{uuid.uuid4().hex[:10]}.example.com",
            "certificate_management_policy": {},
        },
    )
    assert rd.status_code == managed.status_code == 201
    # The filter sees settled rows: the managed domain's job completed (test delay 0).
    with_cert = admin.get(
        "/reserved_domains", params={"filter": 'obj.certificate.id.startsWith("cert_")'}
    )
    assert [d["id"] for d in with_cert.json()["reserved_domains"]] == [managed.json()["id"]]
    without = admin.get("/reserved_domains", params={"filter": "obj.certificate == null"})
    assert [d["id"] for d in without.json()["reserved_domains"]] == [rd.json()["id"]]
    policy = admin.get(
        "/reserved_domains",
        params={"filter": 'obj.certificate_management_policy.private_key_type == "rsa"'},
    )
    assert [d["id"] for d in policy.json()["reserved_domains"]] == [managed.json()["id"]]
    ingress = admin.post(
        "/agent_ingresses",
        json={
            "domain": f"h{uuid.uuid4().hex[:10]}.example.com",
            "certificate_management_policy": {},
        },
    ).json()
    settled = admin.get(
        "/agent_ingresses", params={"filter": "obj.certificate_management_status.renews_at != null"}
    )
    assert [i["id"] for i in settled.json()["ingresses"]] == [ingress["id"]]


@pytest.mark.parametrize(
    ("expression", "code", "column"),
    [
        ("obj.description ==", "ERR_FILTER_SYNTAX", None),
        ("", "ERR_FILTER_SYNTAX", 1),
        ("   ", "ERR_FILTER_SYNTAX", 1),
        ("obj.description = 'x'", "ERR_FILTER_SYNTAX", None),
        ("obj.colour == 'red'", "ERR_FILTER_UNKNOWN_FIELD", 5),
        ("obj.description.nope == 'x'", "ERR_FILTER_TYPE", 17),  # a string has no fields
        ("obj.certificate == 1", "ERR_FILTER_UNKNOWN_FIELD", 5),
        ("obj.created_at > 5", "ERR_FILTER_TYPE", None),
        ("obj.description.startsWith(1)", "ERR_FILTER_TYPE", None),
        ('obj.created_at > timestamp("yesterday")', "ERR_FILTER_SYNTAX", 28),
        ("obj.description == '" + "x" * 5000 + "'", "ERR_FILTER_TOO_LONG", None),
    ],
)
def test_each_filter_error(admin, expression, code, column):
    body = assert_error(admin.get("/api_keys", params={"filter": expression}), 400, code)
    assert body["details"]["param"] == "filter"
    if code != "ERR_FILTER_TOO_LONG":
        assert "column" in body["msg"]
    if column is not None:
        assert f"column {column}" in body["msg"]


def test_filter_given_twice_is_400(admin):
    body = assert_error(
        admin.get("/api_keys?filter=obj.id!=%22%22&filter=obj.id!=%22x%22"),
        400,
        "ERR_INVALID_PARAMETER",
    )
    assert body["details"]["param"] == "filter"


def test_filter_and_cursor_errors_keep_their_codes(admin):
    assert_error(
        admin.get("/api_keys", params={"filter": 'obj.id != ""', "before_id": "nope"}),
        400,
        "ERR_INVALID_PARAMETER",
    )


def test_tenants_stay_apart(admin, other):
    _keys(other, 2, "theirs")
    mine = admin.get("/api_keys", params={"filter": 'obj.description.startsWith("theirs")'})
    assert mine.json()["keys"] == []


@pytest.mark.inprocess  # shrinks the scan bound of the in-process server
def test_the_scan_is_bounded(admin, monkeypatch):
    monkeypatch.setattr(listing, "MAX_SCAN", 4)
    monkeypatch.setattr(listing, "FIRST_BATCH", 2)
    monkeypatch.setattr(listing, "MAX_BATCH", 2)
    tag = uuid.uuid4().hex[:6]
    hit = _keys(admin, 1, f"{tag}-hit")
    _keys(admin, 6, f"{tag}-miss")  # newer than the hit: scanned first
    expression = f'obj.description.startsWith("{tag}-hit")'
    # The 6 misses plus the admin key exceed the bound: an empty page that goes on after the
    # last row read, and not a last page.
    first = admin.get("/api_keys", params={"filter": expression, "limit": 5}).json()
    assert first["keys"] == []
    assert first["next_page_uri"] is not None
    everything, pages = _walk(admin, first["next_page_uri"])
    assert [k["id"] for k in everything] == hit
    assert pages >= 2


@pytest.mark.inprocess
def test_a_bounded_page_returns_what_matched(admin, monkeypatch):
    monkeypatch.setattr(listing, "MAX_SCAN", 3)
    monkeypatch.setattr(listing, "FIRST_BATCH", 3)
    tag = uuid.uuid4().hex[:6]
    made = _keys(admin, 4, f"{tag}-")
    expression = f'obj.description.startsWith("{tag}-")'
    page = admin.get("/api_keys", params={"filter": expression, "limit": 10}).json()
    assert [k["id"] for k in page["keys"]] == made[::-1][:3]
    query = parse_qs(urlsplit(page["next_page_uri"]).query)
    assert query["before_id"] == [made[1]]
    rest = admin.get(_local(page["next_page_uri"])).json()
    assert [k["id"] for k in rest["keys"]] == [made[0]]


# Endpoints: exact-match id / url / ids / urls.


def _endpoint(factory, account_id: str, host: str):  # type: ignore[no-untyped-def]
    return factory.row(
        Endpoint,
        account_id,
        proto="https",
        hostport=f"{host}:443",
        public_url=f"https://{host}",
        type="ephemeral",
    )


def test_endpoint_exact_filters(admin, factory):
    a, b, c = (_endpoint(factory, admin.creds.account_id, f"{n}.example.com") for n in "abc")

    def listed(query: str) -> list[str]:
        response = admin.get(f"/endpoints?{query}")
        assert response.status_code == 200, response.text
        return [e["id"] for e in response.json()["endpoints"]]

    assert listed(f"id={a.id}") == [a.id]
    assert listed(f"id={a.id}&id={c.id}") == [c.id, a.id]
    assert listed(f"ids={a.id},{b.id}") == [b.id, a.id]
    assert listed("url=https%3A%2F%2Fb.example.com") == [b.id]
    assert listed("urls=https%3A%2F%2Fb.example.com,https%3A%2F%2Fc.example.com") == [c.id, b.id]
    # Items are split on literal commas only: an encoded comma stays inside its URL (five
    # items, not nine: the list's limit is five).
    commas = [f"https%3A%2F%2Fx{n}.example.com%2Fa%2Cb" for n in range(4)]
    assert listed("urls=" + ",".join(["https%3A%2F%2Fb.example.com", *commas])) == [b.id]
    assert listed(f"id={a.id}&url=https%3A%2F%2Fb.example.com") == []
    assert listed(f"id={b.id}&filter=obj.port%20%3D%3D%20443") == [b.id]
    assert listed(f"id={ids.new_id('ep')}") == []
    # Paging keeps the exact filters.
    page = admin.get(f"/endpoints?id={a.id}&id={b.id}&limit=1").json()
    assert parse_qs(urlsplit(page["next_page_uri"]).query)["id"] == [a.id, b.id]
    assert [e["id"] for e in admin.get(_local(page["next_page_uri"])).json()["endpoints"]] == [a.id]


@pytest.mark.parametrize(
    "query",
    [
        "id=nope",
        "ids=",  # one empty id (an empty list cannot be told apart: minItems 1)
        "urls=",
        "id=ak_0ERZHb3h9qLJ2PbQVel0iN6pagQ",
        "ids=ep_x,ep_y",
        "url=https://" + "x" * 300,
        "url=not-a-url",
        "urls=" + ",".join(f"https://{n}.example.com" for n in range(6)),
        "&".join(["id=ep_0ERZHb3h9qLJ2PbQVel0iN6pagQ"] * 51),
    ],
)
def test_endpoint_exact_filters_are_validated(admin, query):
    assert_error(admin.get(f"/endpoints?{query}"), 400, "ERR_INVALID_PARAMETER")


def test_event_source_list_filter(admin, factory):
    subscription = factory.row(EventSubscription, admin.creds.account_id)
    url = f"/event_subscriptions/{subscription.id}/sources"
    for event_type in ("api_key_created.v0", "api_key_deleted.v0", "endpoint_created.v0"):
        admin.post(url, json={"type": event_type})
    got = admin.get(url, params={"filter": 'obj.type.startsWith("api_key")'}).json()
    assert [s["type"] for s in got["sources"]] == ["api_key_created.v0", "api_key_deleted.v0"]
    assert_error(
        admin.get(url, params={"filter": "obj.kind == 1"}), 400, "ERR_FILTER_UNKNOWN_FIELD"
    )
