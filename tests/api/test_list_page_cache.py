"""A list page of a cached-rendering model is read again only when the database changed
(tunnelgw.services.rendercache.PageCache under Database.data_marker): an unchanged database answers
from the rows kept, with the credential check still run; a change by this server, or by any
other connection to the file, is seen by the very next list."""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest

from tests.factories import assert_error
from tunnelgw.services.rendercache import PageCache
from tunnelgw.storage import db

PATH = "/backends/http_response"

pytestmark = pytest.mark.inprocess  # reads the in-process server's database and statements


@pytest.fixture
def statements(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The SQL of every read the server runs from now on (but the fault rules' lookup)."""
    seen: list[str] = []
    original = db._SqliteConnection.fetch

    async def fetch(self: Any, sql: str, args: Any) -> Any:
        if "fault_rule" not in sql:
            seen.append(sql)
        return await original(self, sql, args)

    monkeypatch.setattr(db._SqliteConnection, "fetch", fetch)
    return seen


@pytest.fixture
def database(admin: Any) -> db.Database:
    database = db.current()
    if database.data_marker() is None:
        pytest.skip("the page cache is for SQLite files")
    database.pages.clear()  # pages other tests kept
    return database


def _page_reads(statements: list[str]) -> list[str]:
    return [sql for sql in statements if 'FROM "http_response_backend"' in sql]


def test_an_unchanged_database_answers_a_page_without_reading_it(admin, database, statements):
    """Kept at its second read, answered from the third on."""
    for n in range(3):
        admin.post(PATH, json={"description": f"b{n}"})
    statements.clear()
    first = admin.get(PATH)
    second = admin.get(PATH)
    assert len(_page_reads(statements)) == 2
    statements.clear()
    third = admin.get(PATH)
    assert third.content == second.content == first.content
    assert _page_reads(statements) == []
    assert len(statements) == 1
    assert "credential.token_hash" in statements[0]


def test_a_walk_through_a_list_keeps_no_page(admin, database):
    for _ in range(5):
        admin.post(PATH, json={})
    url = f"{PATH}?limit=2"
    while url:
        url = (admin.get(url).json()["next_page_uri"] or "").removeprefix("http://testserver")
    assert database.pages.rows == 0
    assert len(database.pages.seen) == 3


def test_the_key_is_still_checked_on_a_kept_page(admin, factory, database):
    admin.post(PATH, json={})
    key = admin.post("/api_keys", json={}).json()
    client = factory.client(key["token"])
    pages = [client.get(PATH).json() for _ in range(3)]  # the third one kept
    assert pages[0] == pages[2]
    assert database.pages.rows == 1
    assert admin.delete(f"/api_keys/{key['id']}").status_code == 204
    assert_error(client.get(PATH), 401, "ERR_INVALID_CREDENTIALS")


def test_a_write_through_the_api_is_seen_by_the_next_list(admin, database, statements):
    created = admin.post(PATH, json={"description": "before"}).json()
    for _ in range(3):  # kept, then answered from what was kept
        assert [b["description"] for b in admin.get(PATH).json()["backends"]] == ["before"]
    admin.patch(f"{PATH}/{created['id']}", json={"description": "after"})
    statements.clear()
    assert [b["description"] for b in admin.get(PATH).json()["backends"]] == ["after"]
    assert len(_page_reads(statements)) == 1


def test_a_commit_by_another_connection_is_seen_by_the_next_list(admin, database):
    """Another worker, the command line or an operator's sqlite3 shell: any commit to the
    file moves the reader's data_version."""
    created = admin.post(PATH, json={"description": "before"}).json()
    for _ in range(3):  # kept, then answered from what was kept
        assert admin.get(PATH).json()["backends"][0]["description"] == "before"
    assert database.pages.rows == 1
    outside = sqlite3.connect(database._path)
    try:
        with outside:
            outside.execute(
                "UPDATE http_response_backend SET description = ? WHERE id = ?",
                ("changed elsewhere", created["id"]),
            )
    finally:
        outside.close()
    assert admin.get(PATH).json()["backends"][0]["description"] == "changed elsewhere"


def test_pages_are_kept_per_account_cursor_and_limit(admin, other, database):
    mine = [admin.post(PATH, json={}).json()["id"] for _ in range(3)]
    theirs = other.post(PATH, json={}).json()["id"]
    for _ in range(3):  # the third round answers from the kept pages
        assert [b["id"] for b in admin.get(PATH).json()["backends"]] == mine[::-1]
        assert [b["id"] for b in other.get(PATH).json()["backends"]] == [theirs]
        one = admin.get(PATH, params={"limit": 1}).json()
        assert [b["id"] for b in one["backends"]] == [mine[2]]
        after = admin.get(PATH, params={"limit": 1, "before_id": mine[2]}).json()
        assert [b["id"] for b in after["backends"]] == [mine[1]]


def test_an_in_memory_database_keeps_no_pages():
    assert db.Database("sqlite://").data_marker() is None


def test_a_page_is_kept_at_its_second_read_under_one_marker_and_bounded():
    cache = PageCache(max_rows=4, max_seen=3)

    def read(key: str, marker: tuple[int, int], rows: list[tuple[str]]) -> None:
        if cache.get(key, marker) is None:
            cache.store(key, marker, rows)

    rows = [("a",), ("b",)]
    read("p1", (1, 0), rows)
    assert cache.get("p1", (1, 0)) is None  # read once: remembered, not kept
    read("p1", (2, 0), rows)  # read again, but the database changed in between
    assert cache.get("p1", (2, 0)) is None
    read("p1", (2, 0), rows)
    assert cache.get("p1", (2, 0)) is rows
    assert cache.get("p1", (3, 0)) is None  # changed since: all dropped
    assert cache.rows == 0
    assert cache.get("p1", (2, 0)) is None  # and never served again
    for _ in range(2):
        read("p1", (4, 0), rows)
        read("p2", (4, 0), [("c",), ("d",)])
        read("p3", (4, 0), [("e",)])  # no room left: not kept, nothing evicted
    assert cache.get("p1", (4, 0)) is rows
    assert cache.get("p2", (4, 0)) == [("c",), ("d",)]
    assert cache.get("p3", (4, 0)) is None
    assert cache.rows == 4
    read("p4", (4, 0), rows)
    assert list(cache.seen) == ["p2", "p3", "p4"]  # remembered reads are bounded too
