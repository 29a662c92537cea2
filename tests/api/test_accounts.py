"""Issue 32: accounts on demand. With the operator token (TUNNELGW_OPERATOR_TOKEN) the admin
API creates an account with its admin user and key (and a fixture or snapshot loaded into it),
lists the accounts and deletes one with everything in it; nothing else can."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select

from tests.api.test_snapshots import build_world
from tests.conftest import OPERATOR_TOKEN
from tests.factories import ApiClient, assert_error
from tunnelgw.services import accounts

ACCOUNTS = "/_admin/accounts"
HRB = "/backends/http_response"
OPERATIONS = [
    ("POST", ACCOUNTS, {}),
    ("GET", ACCOUNTS, None),
    ("DELETE", f"{ACCOUNTS}/acct_0ERkzK3Nwthdfi0ERkzK3Nwth", None),
]


@dataclass
class Made:
    """An account the operator made, its admin client and the create answer."""

    client: ApiClient
    answer: dict[str, Any]

    @property
    def creds(self) -> Any:  # what build_world reads
        return self

    @property
    def account_id(self) -> str:
        return str(self.answer["id"])

    def post(self, path: str, **kw: Any) -> Any:
        return self.client.post(path, **kw)


@pytest.fixture
def operator(factory):  # type: ignore[no-untyped-def]
    return factory.client(OPERATOR_TOKEN)


def create(factory: Any, operator: ApiClient, **body: Any) -> Made:
    response = operator.post(ACCOUNTS, json=body)
    assert response.status_code == 201, response.text
    answer = response.json()
    return Made(factory.client(answer["token"]), answer)


def _request(client: Any, method: str, path: str, body: Any, **kw: Any) -> Any:
    return client.request(method, path, **({} if body is None else {"json": body}), **kw)


# --- the operator's credential --------------------------------------------------------------


@pytest.mark.parametrize(("method", "path", "body"), OPERATIONS)
def test_an_accounts_key_cannot_manage_accounts(factory, operator, admin, method, path, body):
    before = operator.get(ACCOUNTS, params={"limit": 1}).json()["accounts"]
    assert_error(_request(admin, method, path, body), 401, "ERR_INVALID_CREDENTIALS")
    assert_error(
        _request(admin, method, path, body, token=None), 401, "ERR_AUTHENTICATION_REQUIRED"
    )
    assert_error(
        _request(admin, method, path, body, token="x" * 40), 401, "ERR_INVALID_CREDENTIALS"
    )
    near = OPERATOR_TOKEN[:-1] + ("A" if OPERATOR_TOKEN[-1] != "A" else "B")
    assert_error(_request(admin, method, path, body, token=near), 401, "ERR_INVALID_CREDENTIALS")
    assert operator.get(ACCOUNTS, params={"limit": 1}).json()["accounts"] == before
    # ... and the operator token is no account's key.
    assert_error(operator.get(HRB), 401, "ERR_INVALID_CREDENTIALS")


def test_the_operator_token_is_held_to_the_bootstrap_tokens_rules(tmp_path):
    from pydantic import ValidationError

    from tunnelgw.core.settings import Settings

    for weak in ("short", "a" * 40, "password" * 5):
        with pytest.raises(ValidationError, match="operator_token"):
            Settings(data_dir=tmp_path, operator_token=weak)
    with pytest.raises(ValidationError, match="must not be the bootstrap token"):
        Settings(data_dir=tmp_path, operator_token=OPERATOR_TOKEN, bootstrap_token=OPERATOR_TOKEN)
    assert Settings(data_dir=tmp_path, operator_token="").operator_token is None
    assert OPERATOR_TOKEN not in repr(Settings(data_dir=tmp_path, operator_token=OPERATOR_TOKEN))


def test_without_an_operator_token_the_account_operations_are_refused(tmp_path):
    from starlette.testclient import TestClient

    from tests.openapi_check import SpecValidator
    from tunnelgw.core.settings import Settings
    from tunnelgw.http.app import create_app
    from tunnelgw.migrations import migrate

    settings = Settings(data_dir=tmp_path, admin_api=True)
    migrate.upgrade(settings.resolved_database_url())
    with TestClient(create_app(settings), raise_server_exceptions=False) as http:
        client = ApiClient(http, SpecValidator(http.get("/openapi.json").json()), OPERATOR_TOKEN)
        for method, path, body in OPERATIONS:
            assert_error(_request(client, method, path, body), 403, "ERR_PERMISSION_DENIED")


# --- create, list, delete -------------------------------------------------------------------


def test_create_gives_an_admin_key_that_sees_only_its_account(factory, operator, admin):
    assert admin.post(HRB, json={"body": "elsewhere"}).status_code == 201
    made = create(factory, operator, name="ci-job-1")
    answer = made.answer
    assert (answer["name"], answer["fixture"]) == ("ci-job-1", None)
    assert made.client.get(HRB).json()["backends"] == []
    keys = made.client.get("/api_keys").json()["keys"]
    assert [(k["id"], k["owner_id"]) for k in keys] == [
        (answer["api_key_id"], answer["admin_user_id"])
    ]
    assert made.client.post("/_admin/reset").status_code == 200  # an admin of its account
    listed = operator.get(ACCOUNTS).json()
    assert answer["id"] in [a["id"] for a in listed["accounts"]]
    assert answer["token"] not in str(listed)


def test_create_loads_a_fixture_in_the_same_call(factory, operator):
    fixture = {"version": 1, "api": {"http_response_backends": [{"ref": "b", "body": "hi"}]}}
    made = create(factory, operator, fixture=fixture)
    summary = made.answer["fixture"]
    assert (summary["account_id"], summary["loaded"]) == (made.account_id, True)
    [backend] = made.client.get(HRB).json()["backends"]
    assert (backend["id"], backend["body"]) == (summary["labels"]["b"], "hi")


def test_create_loads_a_snapshot(factory, operator):
    """A snapshot of a dropped account comes back, with its ids, into a new one."""
    source = create(factory, operator)
    backend = source.client.post(HRB, json={"body": "snap"}).json()
    document = source.client.get("/_admin/snapshot").json()
    assert operator.delete(f"{ACCOUNTS}/{source.account_id}").status_code == 200
    made = create(factory, operator, fixture=document)
    counts = made.answer["fixture"]["counts"]
    assert counts == {"principal": 1, "api_key": 1, "http_response_backend": 1}
    [loaded] = made.client.get(HRB).json()["backends"]
    assert (loaded["id"], loaded["body"]) == (backend["id"], "snap")


def test_a_bad_fixture_creates_no_account(factory, operator):
    count = len(_all_accounts(operator))
    body = '{"name": "bad",\n "fixture": {"version": 1,\n  "tunnels": [{"nope": 1}]}}'
    response = operator.post(ACCOUNTS, content=body, headers={"Content-Type": "application/json"})
    error = assert_error(response, 400, "ERR_INVALID_FIXTURE")
    assert error["msg"].startswith("request body:3:"), error["msg"]
    assert "nope" in error["msg"]
    # Refused by its create operation, after the account was made: the account goes again.
    refused = {"version": 1, "api": {"http_response_backends": [{"status_code": 999}]}}
    error = assert_error(
        operator.post(ACCOUNTS, json={"fixture": refused}), 400, "ERR_INVALID_FIXTURE"
    )
    assert error["details"]["written"] == "false"
    assert len(_all_accounts(operator)) == count


def _all_accounts(operator: ApiClient) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    params: dict[str, Any] = {"limit": 100}
    for _ in range(1000):
        page = operator.get(ACCOUNTS, params=params).json()
        found += page["accounts"]
        if page["next_page_uri"] is None:
            return found
        params["before_id"] = page["accounts"][-1]["id"]
    raise AssertionError("more than 100000 accounts")


def test_the_list_is_paged_newest_first(factory, operator):
    made = [create(factory, operator, name=f"p{i}").account_id for i in range(3)]
    page = operator.get(ACCOUNTS, params={"limit": 2}).json()
    assert [a["id"] for a in page["accounts"]] == made[::-1][:2]
    assert page["next_page_uri"].endswith(f"before_id={made[1]}&limit=2") or (
        f"before_id={made[1]}" in page["next_page_uri"]
    )
    after = operator.get(ACCOUNTS, params={"limit": 1, "beforeId": made[1]}).json()
    assert after["accounts"][0]["id"] == made[0]
    bad = operator.get(ACCOUNTS, params={"before_id": "ak_x"})
    assert_error(bad, 400, "ERR_INVALID_PARAMETER")


def test_a_deleted_accounts_key_stops_working(factory, operator, admin):
    made = create(factory, operator)
    assert made.client.post(HRB, json={"body": "x"}).status_code == 201
    answer = operator.delete(f"{ACCOUNTS}/{made.account_id}")
    assert answer.status_code == 200, answer.text
    deleted = answer.json()["deleted"]
    assert (deleted["account"], deleted["api_key"], deleted["http_response_backend"]) == (1, 1, 1)
    assert_error(made.client.get(HRB), 401, "ERR_INVALID_CREDENTIALS")
    again = operator.delete(f"{ACCOUNTS}/{made.account_id}")
    assert_error(again, 404, "ERR_NOT_FOUND")
    assert_error(operator.delete(f"{ACCOUNTS}/acct_x"), 400, "ERR_INVALID_PARAMETER")
    assert admin.get(HRB).status_code == 200  # other accounts go on


def test_100_accounts_made_and_dropped_leave_no_row(factory, operator, settings, tmp_path):
    """One account holds a row in every table an account can (the snapshot tests' world,
    its journal, events, a fault rule, a fixture load record), 99 more a key and a journal
    entry; after the deletes no table holds a row of any of them."""
    world = create(factory, operator, fixture={"version": 1, "tunnels": [{"ref": "t"}]})
    build_world(settings, world, tmp_path)
    rule = {"operation": "api_keys.get", "latency_ms": 1, "count": 1}
    assert world.client.post("/_admin/faults", json=rule).status_code == 201
    made = [world] + [create(factory, operator, name=f"n{i}") for i in range(99)]
    for each in made:
        assert each.client.get("/api_keys").status_code == 200  # a journal entry
    ids = [each.account_id for each in made]
    before = _rows(factory, ids)
    empty = {name for name, count in before.items() if not count}
    # Every table of an account holds rows here, so the deletes below are tested on each.
    assert empty == set(), empty
    for account_id in ids:
        response = operator.delete(f"{ACCOUNTS}/{account_id}")
        assert response.status_code == 200, response.text
    after = _rows(factory, ids)
    assert after == dict.fromkeys(after, 0)
    assert set(after) == {str(t.name) for t in accounts.account_tables()} | {"account"}


def _rows(factory: Any, account_ids: list[str]) -> dict[str, int]:
    """Rows of the accounts in each table that holds rows of accounts (and `account`)."""
    from tunnelgw.models import Account

    async def count(unit: Any) -> dict[str, int]:
        found: dict[str, int] = {}
        for table in accounts.account_tables():
            stmt = (
                select(func.count()).select_from(table).where(table.c.account_id.in_(account_ids))
            )
            found[str(table.name)] = int((await unit.exec(stmt)).one())
        stmt = select(func.count()).select_from(Account).where(Account.id.in_(account_ids))  # type: ignore[attr-defined]
        found["account"] = int((await unit.exec(stmt)).one())
        return found

    result: dict[str, int] = factory.query(count)
    return result


def test_every_table_but_the_global_ones_belongs_to_an_account():
    """The delete takes every table with an `account_id` (derived from the models): a table
    of account rows without one would be missed, so none may exist."""
    from sqlmodel import SQLModel

    from tunnelgw import models

    models.load_all()
    without = {str(t.name) for t in SQLModel.metadata.sorted_tables if "account_id" not in t.c}
    assert without == {"account", "issuing_authority"}


def test_the_delete_runs_children_first(tmp_path: Path):
    names = [str(t.name) for t in accounts.account_tables()]
    for table in accounts.account_tables():
        for key in table.foreign_keys:
            parent = str(key.column.table.name)
            if parent != "account" and parent != str(table.name):
                assert names.index(str(table.name)) < names.index(parent), (table.name, parent)
