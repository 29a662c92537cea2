"""List items rendered through the render cache (tunnelgw.services.rendercache): the same bytes as
rendering every item afresh, re-rendered when their row changes, never across accounts, and
still checked by response validation."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.factories import assert_error
from tunnelgw.models import HttpResponseBackend
from tunnelgw.services import rendercache
from tunnelgw.storage import records

PATH = "/backends/http_response"

pytestmark = pytest.mark.inprocess  # switches the in-process server's cache

BODIES: list[dict[str, Any]] = [
    {},
    {"description": 'quote " backslash \\ tab \t', "metadata": '{"k": [1, 2]}'},
    {"description": "unicode \u00e9\u4e2d\U0001f600", "body": "line\nbreak\u2028"},
    {"headers": {"Content-Type": "text/plain", "X-Retry": "120"}, "status_code": 503},
    {"headers": {}, "body": "x" * 3000, "status_code": 599},
]


@pytest.fixture
def uncached(monkeypatch: pytest.MonkeyPatch) -> Any:
    """Turns the cache off for HttpResponseBackend lists while the returned function's
    context is active (the ordinary rendering: each item loaded, rendered, validated)."""

    def switch(on: bool) -> None:
        monkeypatch.setattr(HttpResponseBackend, "CACHED_RENDERING", on)

    return switch


def _pages(client: Any, limit: int) -> list[bytes]:
    """The raw bodies of every page of the list, following next_page_uri."""
    bodies = []
    params: dict[str, Any] | None = {"limit": limit}
    url = PATH
    while url:
        response = client.get(url, params=params)
        assert response.status_code == 200
        bodies.append(response.content)
        url = (response.json()["next_page_uri"] or "").removeprefix("http://testserver")
        params = None
    return bodies


def test_cached_and_uncached_lists_are_the_same_bytes(admin, uncached):
    assert rendercache.cacheable(HttpResponseBackend)
    for body in BODIES:
        assert admin.post(PATH, json=body).status_code == 201
    uncached(False)
    expected = [_pages(admin, limit) for limit in (100, 2)]
    uncached(True)
    first = [_pages(admin, limit) for limit in (100, 2)]  # rendered, validated, cached
    again = [_pages(admin, limit) for limit in (100, 2)]  # from the cache
    assert first == expected
    assert again == expected
    assert len(expected[1]) == 3  # 2 + 2 + 1 items: next_page_uri from the cached path too


def test_the_cache_is_used_and_keeps_each_row_once(admin):
    for body in BODIES[:3]:
        admin.post(PATH, json=body)
    rendercache.CACHE.clear()
    admin.get(PATH)
    assert len(rendercache.CACHE) == 3
    admin.get(PATH)
    admin.get(PATH, params={"limit": 1})
    assert len(rendercache.CACHE) == 3


def test_an_updated_row_is_rendered_again(admin):
    backend = admin.post(PATH, json={"description": "before", "status_code": 201}).json()
    assert admin.get(PATH).json()["backends"] == [backend]
    path = f"{PATH}/{backend['id']}"
    updated = admin.patch(path, json={"description": "after", "headers": {"A": "1"}}).json()
    assert updated["description"] == "after"
    assert admin.get(PATH).json()["backends"] == [updated]
    assert admin.delete(path).status_code == 204
    assert admin.get(PATH).json()["backends"] == []


def test_rows_of_another_account_never_appear(admin, other):
    body = {"description": "same", "body": "same", "headers": {"X": "1"}}
    mine = {admin.post(PATH, json=body).json()["id"] for _ in range(3)}
    theirs = {other.post(PATH, json=body).json()["id"] for _ in range(3)}
    for _ in range(2):  # the second round answers from the cache
        assert {b["id"] for b in admin.get(PATH).json()["backends"]} == mine
        assert {b["id"] for b in other.get(PATH).json()["backends"]} == theirs


def _unchecked(client: Any, **headers: str) -> httpx.Response:
    """GET of the list without the openapi-core check (for answers it does not document)."""
    sent = {"Authorization": f"Bearer {client.creds.token}", "Service-Version": "2"}
    response: httpx.Response = client.http.get(PATH, headers={**sent, **headers})
    return response


def test_the_base_url_is_part_of_the_key(admin):
    backend = admin.post(PATH, json={}).json()
    assert admin.get(PATH).json()["backends"][0]["uri"] == backend["uri"]
    elsewhere = _unchecked(admin, Host="api.example.test").json()
    assert elsewhere["backends"][0]["uri"] == f"http://api.example.test{PATH}/{backend['id']}"
    assert elsewhere["uri"] == f"http://api.example.test{PATH}"
    assert admin.get(PATH).json()["backends"][0]["uri"] == backend["uri"]


def test_an_invalid_rendering_is_caught_by_response_validation(admin, monkeypatch, caplog):
    backend = admin.post(PATH, json={"description": "fine"}).json()
    record = records.record_class(HttpResponseBackend)
    valid_to_api = record.to_api

    def invalid(self: Any) -> dict[str, Any]:
        return {**valid_to_api(self), "status_code": 99}  # the spec's minimum is 100

    rendercache.CACHE.clear()
    monkeypatch.setattr(record, "to_api", invalid)
    assert_error(_unchecked(admin), 500, "ERR_INTERNAL")
    assert "at /backends/0/status_code: 99 is less than the minimum of 100" in caplog.text
    assert len(rendercache.CACHE) == 0  # an invalid rendering is never kept
    monkeypatch.setattr(record, "to_api", valid_to_api)
    assert admin.get(PATH).json()["backends"] == [backend]


def test_an_invalid_envelope_is_caught_by_response_validation(admin, monkeypatch):
    admin.post(PATH, json={})
    admin.get(PATH)  # the item is cached
    valid_envelope = rendercache.Page.envelope

    def invalid(self: rendercache.Page, items: list[Any]) -> dict[str, Any]:
        return {**valid_envelope(self, items), "uri": 5}

    monkeypatch.setattr(rendercache.Page, "envelope", invalid)
    assert_error(_unchecked(admin), 500, "ERR_INTERNAL")
