"""A GET of one resource reads its row in the credential check's own statement
(tunnelgw.services.auth.bearer_info with `row`, db.carry): one statement per request, and still the
same answers: a deleted key fails, another account's row is not found, a missing row is 404,
the key reading itself works, and a write never uses a row read that way."""

from __future__ import annotations

from typing import Any

import pytest

from models import HttpResponseBackend
from tests.factories import assert_error
from tunnelgw.storage import db

PATH = "/backends/http_response"


@pytest.fixture
def statements(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The SQL of every read the server runs from now on (SQLite and PostgreSQL), but the
    fault rules' lookup (the test app has the admin API on; a server without it has none)."""
    seen: list[str] = []
    for cls in (db._SqliteConnection, db._PgConnection):
        original = cls.fetch

        async def fetch(self: Any, sql: str, args: Any, original: Any = original) -> Any:
            if "fault_rule" not in sql:
                seen.append(sql)
            return await original(self, sql, args)

        monkeypatch.setattr(cls, "fetch", fetch)
    return seen


@pytest.mark.inprocess
def test_a_get_by_id_is_one_statement_with_the_credential_check(admin, statements):
    created = admin.post(PATH, json={"description": "one"}).json()
    statements.clear()
    got = admin.get(f"{PATH}/{created['id']}")
    assert got.status_code == 200
    assert got.json() == created
    assert len(statements) == 1, statements
    assert "WHERE credential.token_hash = " in statements[0]
    assert "JOIN http_response_backend ON" in statements[0]


@pytest.mark.inprocess
def test_a_missing_row_is_404_in_one_statement(admin, statements):
    statements.clear()
    assert_error(admin.get(f"{PATH}/bkdhr_nothere"), 404, "ERR_NOT_FOUND")
    assert len(statements) == 1, statements


def test_another_accounts_row_read_with_the_key_is_not_found(admin, other):
    created = admin.post(PATH, json={}).json()
    assert_error(other.get(f"{PATH}/{created['id']}"), 404, "ERR_NOT_FOUND")
    assert admin.get(f"{PATH}/{created['id']}").status_code == 200


def test_a_deleted_key_fails_on_its_next_get_by_id(admin, factory):
    backend = admin.post(PATH, json={}).json()
    key = admin.post("/api_keys", json={}).json()
    client = factory.client(key["token"])
    assert client.get(f"{PATH}/{backend['id']}").status_code == 200
    assert admin.delete(f"/api_keys/{key['id']}").status_code == 204
    assert_error(client.get(f"{PATH}/{backend['id']}"), 401, "ERR_INVALID_CREDENTIALS")
    wrong = factory.client("tgw_wrong").get(f"{PATH}/{backend['id']}")
    assert_error(wrong, 401, "ERR_INVALID_CREDENTIALS")


def test_a_key_reads_itself_by_id(admin, factory):
    key = admin.post("/api_keys", json={"description": "self"}).json()
    client = factory.client(key["token"])
    got = client.get(f"/api_keys/{key['id']}")
    assert got.status_code == 200
    assert got.json() == {**key, "token": None}


@pytest.mark.inprocess
def test_a_write_reads_its_row_afresh(admin, statements):
    created = admin.post(PATH, json={"description": "before"}).json()
    statements.clear()
    changed = admin.patch(f"{PATH}/{created['id']}", json={"description": "after"})
    assert changed.json()["description"] == "after"
    assert any('FROM "http_response_backend" WHERE' in sql for sql in statements), statements
    assert admin.get(f"{PATH}/{created['id']}").json()["description"] == "after"


def test_a_carried_row_is_taken_once_by_a_read_and_dropped_with_the_request(admin, factory):
    """db.carry: a read unit takes the carried row once; a write unit reads the table; the
    request's scope drops a row no handler took (a handler that failed before its read)."""
    created = admin.post(PATH, json={"description": "stored"}).json()
    key = (created["id"],)
    stale = HttpResponseBackend.new(id=created["id"], account_id="acct_x", description="stale")

    async def check() -> None:
        async with db.request_scope():
            db.carry((HttpResponseBackend, key, stale))
            async with db.write() as unit:
                assert (await unit.get(HttpResponseBackend, key)).description == "stored"
            async with db.read() as unit:
                assert await unit.get(HttpResponseBackend, key) is stale
                assert (await unit.get(HttpResponseBackend, key)).description == "stored"
            db.carry((HttpResponseBackend, key, stale))
        async with db.read() as unit:
            assert (await unit.get(HttpResponseBackend, key)).description == "stored"

    factory._run(check)
