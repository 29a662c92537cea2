"""A GET of one resource reads its row in the credential check's own statement
(tunnelgw.services.auth.bearer_info with `row`, taken by crud.get_owned): one statement per
request, and still the same answers: a deleted key fails, another account's row is not
found, a missing row is 404, the key reading itself works, and a write never uses a row read
that way."""

from __future__ import annotations

from typing import Any

import pytest

from tests.factories import assert_error
from tunnelgw.core.errors import ApiError, Code
from tunnelgw.models import ApiKey, HttpResponseBackend
from tunnelgw.services import crud
from tunnelgw.services.auth import Caller, Carried
from tunnelgw.storage import connections, db

PATH = "/backends/http_response"


@pytest.fixture
def statements(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The SQL of every read the server runs from now on (SQLite and PostgreSQL), but the
    fault rules' lookup (the test app has the admin API on, and other tests' rules may be
    left in their accounts; a server without it has none)."""
    seen: list[str] = []
    for cls in (connections.SqliteConnection, connections.PgConnection):
        original = cls.fetch

        async def fetch(self: Any, sql: str, args: Any, original: Any = original) -> Any:
            if 'FROM "fault_rule"' not in sql and "FROM fault_rule" not in sql:
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
    assert "WHERE bearer_key.token_hash = " in statements[0]
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


def test_a_carried_row_is_taken_once_by_a_read_and_never_by_a_write(admin, factory):
    """Caller.carried: the read of that very row takes it once; a write unit, a locked read
    and a read of another row or model read the table."""
    created = admin.post(PATH, json={"description": "stored"}).json()
    id_ = created["id"]
    stale = HttpResponseBackend.new(id=id_, account_id=admin.creds.account_id, description="x")

    def caller(carried: Carried) -> Caller:
        return Caller(
            admin.creds.account_id, "usr_x", True, admin.creds.api_key_id, carried=carried
        )

    async def check() -> None:
        carrying = caller(Carried(HttpResponseBackend, id_, stale))
        async with db.write() as unit:
            row = await crud.get_owned(unit, HttpResponseBackend, carrying, id_)
            assert row.description == "stored"
        async with db.read() as unit:
            assert await crud.get_owned(unit, ApiKey, carrying, admin.creds.api_key_id)
            assert await crud.get_owned(unit, HttpResponseBackend, carrying, id_) is stale
            again = await crud.get_owned(unit, HttpResponseBackend, carrying, id_)
            assert again.description == "stored"
        missing_row = caller(Carried(HttpResponseBackend, id_, None))  # the check found none
        async with db.read() as unit:
            with pytest.raises(ApiError) as missing:
                await crud.get_owned(unit, HttpResponseBackend, missing_row, id_)
        assert missing.value.code is Code.NOT_FOUND

    factory._run(check)
