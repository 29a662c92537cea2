"""API keys: /api_keys (spec 4.1), ownership rules, token handling and tenant isolation."""

from __future__ import annotations

import hashlib

import pytest
from sqlmodel import select

from tests.factories import assert_error
from tunnelgw.models import ApiKey
from tunnelgw.storage import records

PATH = "/api_keys"


def test_create_returns_token_once_and_it_authenticates(admin, factory):
    created = admin.post(PATH, json={"description": "ci", "metadata": '{"a": 1}'})
    assert created.status_code == 201
    key = created.json()
    assert key["id"].startswith("ak_")
    assert key["uri"] == f"http://testserver/api_keys/{key['id']}"
    assert key["description"] == "ci"
    assert key["metadata"] == '{"a": 1}'
    assert key["owner_id"] == admin.creds.principal_id
    assert key["token"]

    fetched = admin.get(f"{PATH}/{key['id']}").json()
    assert fetched["token"] is None
    assert {**fetched, "token": key["token"]} == key

    listed = admin.get(PATH).json()["keys"]
    assert all(item["token"] is None for item in listed)

    as_new_key = factory.client(key["token"])
    assert as_new_key.get(f"{PATH}/{key['id']}").status_code == 200


def test_create_with_empty_or_no_body_uses_defaults(admin):
    for kwargs in ({}, {"json": {}}, {"json": {"description": None, "owner_id": ""}}):
        created = admin.post(PATH, **kwargs)
        assert created.status_code == 201, created.text
        assert created.json()["description"] == ""
        assert created.json()["owner_id"] == admin.creds.principal_id


def test_token_is_stored_only_as_sha256(admin, factory):
    key = admin.post(PATH, json={}).json()

    async def row(session):
        return (await session.exec(select(ApiKey).where(ApiKey.id == key["id"]))).one()

    stored = factory.query(row)
    assert stored.token_hash == hashlib.sha256(key["token"].encode()).hexdigest()
    assert key["token"] not in {str(v) for v in records.as_dict(stored).values()}


def test_deleted_key_stops_working_on_next_request(admin, factory):
    key = admin.post(PATH, json={}).json()
    client = factory.client(key["token"])
    assert client.get(PATH).status_code == 200
    assert admin.delete(f"{PATH}/{key['id']}").status_code == 204
    assert_error(client.get(PATH), 401, "ERR_INVALID_CREDENTIALS")
    assert_error(admin.get(f"{PATH}/{key['id']}"), 404, "ERR_NOT_FOUND")


def test_a_key_may_delete_itself(admin, factory):
    key = admin.post(PATH, json={}).json()
    client = factory.client(key["token"])
    deleted = client.delete(f"{PATH}/{key['id']}")
    assert deleted.status_code == 204
    assert deleted.content == b""
    assert_error(client.get(PATH), 401, "ERR_INVALID_CREDENTIALS")


def test_admin_may_create_a_key_for_another_principal(admin, factory):
    bot = factory.principal(admin.creds.account_id, "bot")
    created = admin.post(PATH, json={"owner_id": bot.creds.principal_id})
    assert created.status_code == 201
    assert created.json()["owner_id"] == bot.creds.principal_id
    # The new key acts as the bot.
    bot_client = factory.client(created.json()["token"])
    assert bot_client.post(PATH, json={}).json()["owner_id"] == bot.creds.principal_id


def test_non_admin_may_not_name_another_owner(admin, factory):
    user = factory.principal(admin.creds.account_id, "user")
    body = assert_error(
        user.post(PATH, json={"owner_id": admin.creds.principal_id}), 403, "ERR_PERMISSION_DENIED"
    )
    assert body["details"]["field"] == "owner_id"
    # Naming itself is fine.
    own = user.post(PATH, json={"owner_id": user.creds.principal_id})
    assert own.status_code == 201


def test_owner_of_another_account_or_unknown_is_not_found(admin, other):
    assert_error(
        admin.post(PATH, json={"owner_id": other.creds.principal_id}),
        404,
        "ERR_REFERENCE_NOT_FOUND",
    )
    assert_error(
        admin.post(PATH, json={"owner_id": "usr_" + "0" * 27}), 404, "ERR_REFERENCE_NOT_FOUND"
    )


@pytest.mark.parametrize("owner", ["ak_" + "0" * 27, "usr_short", "nonsense"])
def test_malformed_owner_id_is_invalid(admin, owner):
    body = assert_error(admin.post(PATH, json={"owner_id": owner}), 400, "ERR_INVALID_FIELD")
    assert body["details"]["field"] == "owner_id"


def test_update_changes_only_present_keys(admin):
    key = admin.post(PATH, json={"description": "d", "metadata": "m"}).json()
    url = f"{PATH}/{key['id']}"
    assert admin.patch(url, json={"description": "d2"}).json()["metadata"] == "m"
    after = admin.patch(url, json={"metadata": "m2", "description": None}).json()
    assert (after["description"], after["metadata"]) == ("d2", "m2")
    assert admin.patch(url, json={}).json()["description"] == "d2"
    assert admin.patch(url).json()["description"] == "d2"
    cleared = admin.patch(url, json={"description": ""}).json()
    assert cleared["description"] == ""
    assert cleared["token"] is None


def test_update_rejects_fields_it_does_not_take(admin):
    key = admin.post(PATH, json={}).json()
    body = assert_error(
        admin.patch(f"{PATH}/{key['id']}", json={"owner_id": admin.creds.principal_id}),
        400,
        "ERR_UNKNOWN_FIELD",
    )
    assert body["details"]["field"] == "owner_id"


@pytest.mark.parametrize(
    ("field", "value", "code"),
    [
        ("description", "é" * 128, "ERR_FIELD_TOO_LONG"),  # 256 bytes, 128 characters
        ("description", "x" * 256, "ERR_FIELD_TOO_LONG"),
        ("metadata", "€" * 1366, "ERR_FIELD_TOO_LONG"),  # 4098 bytes
        ("description", 5, "ERR_WRONG_TYPE"),
        ("metadata", ["a"], "ERR_WRONG_TYPE"),
    ],
)
def test_field_limits_are_bytes_and_types_are_checked(admin, field, value, code):
    body = assert_error(admin.post(PATH, json={field: value}), 400, code)
    assert body["details"]["field"] == field
    key = admin.post(PATH, json={}).json()
    assert_error(admin.patch(f"{PATH}/{key['id']}", json={field: value}), 400, code)


def test_limits_accept_exactly_the_maximum(admin):
    created = admin.post(PATH, json={"description": "é" * 127 + "x", "metadata": "€" * 1365})
    assert created.status_code == 201, created.text


def test_accounts_are_isolated(admin, other):
    key = admin.post(PATH, json={}).json()
    url = f"{PATH}/{key['id']}"
    assert_error(other.get(url), 404, "ERR_NOT_FOUND")
    assert_error(other.patch(url, json={"description": "x"}), 404, "ERR_NOT_FOUND")
    assert_error(other.delete(url), 404, "ERR_NOT_FOUND")
    assert key["id"] not in {k["id"] for k in other.get(PATH).json()["keys"]}
    assert admin.get(url).json()["description"] == ""


def test_list_pages_newest_first(admin):
    made = [admin.post(PATH, json={"description": str(i)}).json()["id"] for i in range(5)]
    everything = [admin.creds.api_key_id, *made][::-1]

    first = admin.get(PATH, params={"limit": 2}).json()
    assert [k["id"] for k in first["keys"]] == everything[:2]
    assert first["uri"] == "http://testserver/api_keys"
    assert first["next_page_uri"] == (
        f"http://testserver/api_keys?limit=2&before_id={everything[1]}"
    )
    seen = [k["id"] for k in first["keys"]]
    next_uri = first["next_page_uri"]
    while next_uri:
        page = admin.get(next_uri.removeprefix("http://testserver")).json()
        assert page["keys"], "a next_page_uri never leads to an empty page"
        seen += [k["id"] for k in page["keys"]]
        next_uri = page["next_page_uri"]
    assert seen == everything


def test_list_exact_page_has_no_next(admin):
    listed = admin.get(PATH, params={"limit": 1}).json()
    assert len(listed["keys"]) == 1
    assert listed["next_page_uri"] is None


def test_before_id_alias_and_deleted_cursor(admin):
    ids = [admin.post(PATH, json={}).json()["id"] for _ in range(3)]
    alias = admin.get(PATH, params={"beforeId": ids[2]}).json()
    assert [k["id"] for k in alias["keys"]][:2] == [ids[1], ids[0]]
    both = admin.get(PATH, params={"before_id": ids[1], "beforeId": ids[2]}).json()
    assert both["keys"][0]["id"] == ids[0]  # before_id wins
    # A cursor whose row was deleted in between still pages from its position.
    admin.delete(f"{PATH}/{ids[2]}")
    after = admin.get(PATH, params={"before_id": ids[2]}).json()
    assert [k["id"] for k in after["keys"]][:2] == [ids[1], ids[0]]


@pytest.mark.parametrize(
    "params",
    [
        {"limit": 0},
        {"limit": 101},
        {"limit": -1},
        {"limit": "abc"},
        {"limit": 10**30},
        {"before_id": "garbage"},
        {"before_id": "bkdhr_" + "0" * 27},
        {"beforeId": "garbage"},
    ],
)
def test_bad_paging_parameters_are_400(admin, params):
    assert_error(admin.get(PATH, params=params), 400, "ERR_INVALID_PARAMETER")


def test_unknown_id_is_404(admin):
    for method in ("get", "delete"):
        assert_error(getattr(admin, method)(f"{PATH}/ak_doesnotexist"), 404, "ERR_NOT_FOUND")
    assert_error(admin.patch(f"{PATH}/x", json={}), 404, "ERR_NOT_FOUND")
