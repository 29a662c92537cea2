"""AI gateway API keys (/ai_gateway_api_keys): the platform's Go client v8 shapes, the token
once and hashed at rest, the endpoint reference, the principal Refs, limits, paging, filters
and tenant isolation. Every response is validated against openapi.yaml (openapi-core)."""

from __future__ import annotations

import hashlib
import re
import uuid

import pytest
from sqlmodel import select

from tests.factories import assert_error
from tunnelgw.models import AiGatewayApiKey
from tunnelgw.storage import records

PATH = "/ai_gateway_api_keys"
BASE = "http://testserver"
TOKEN = re.compile(r"tgwai_[0-9A-Za-z]{43}")
POLICY = "on_http_request:\n  - actions:\n      - type: deny\n"


def _endpoint(client) -> str:
    made = client.post(
        "/endpoints",
        json={"url": f"https://{uuid.uuid4().hex[:10]}.internal", "traffic_policy": POLICY},
    )
    assert made.status_code == 201, made.text
    return str(made.json()["id"])


def _row(factory, id_: str) -> AiGatewayApiKey:
    async def read(session):
        query = select(AiGatewayApiKey).where(AiGatewayApiKey.id == id_)
        return (await session.exec(query)).one_or_none()

    return factory.query(read)  # type: ignore[no-any-return]


def test_create_get_list_update_delete(admin):
    endpoint = _endpoint(admin)
    made = admin.post(
        PATH, json={"description": "chat", "metadata": '{"team": 1}', "endpoint_id": endpoint}
    )
    assert made.status_code == 201, made.text
    key = made.json()
    assert key["id"].startswith("aigk_")
    assert key["uri"] == f"{BASE}{PATH}/{key['id']}"
    assert (key["description"], key["metadata"]) == ("chat", '{"team": 1}')
    assert key["updated_at"] == key["created_at"]
    me = {"id": admin.creds.principal_id, "uri": ""}  # a user: as the platform shows one
    assert key["created_by"] == key["last_updated_by"] == me
    assert key["endpoint"] == {"id": endpoint, "uri": f"{BASE}/endpoints/{endpoint}"}
    assert TOKEN.fullmatch(key["token"])
    assert key["display_name"] == f"{key['token'][:10]}***{key['token'][-4:]}"
    assert key["last_used"] is None
    # The token is shown once: never by get, list or update.
    got = admin.get(f"{PATH}/{key['id']}").json()
    assert got == {**key, "token": None}
    assert admin.get(PATH).json()["ai_gateway_api_keys"] == [got]
    changed = admin.patch(f"{PATH}/{key['id']}", json={"description": "chat (prod)"}).json()
    assert changed["token"] is None
    assert (changed["description"], changed["metadata"]) == ("chat (prod)", '{"team": 1}')
    assert changed["endpoint"] == key["endpoint"]
    assert admin.delete(f"{PATH}/{key['id']}").status_code == 204
    assert_error(admin.get(f"{PATH}/{key['id']}"), 404, "ERR_NOT_FOUND")
    assert admin.get(PATH).json()["ai_gateway_api_keys"] == []


def test_empty_or_no_body_uses_defaults(admin):
    for kwargs in ({}, {"json": {}}, {"json": {"description": None, "endpoint_id": ""}}):
        made = admin.post(PATH, **kwargs)
        assert made.status_code == 201, made.text
        key = made.json()
        assert (key["description"], key["metadata"], key["endpoint"]) == ("", "", None)


def test_the_token_is_stored_only_as_its_sha256(admin, factory):
    key = admin.post(PATH, json={}).json()
    stored = _row(factory, key["id"])
    assert stored.token_hash == hashlib.sha256(key["token"].encode()).hexdigest()
    assert key["token"] not in {str(v) for v in records.as_dict(stored).values()}
    assert stored.display_name == key["display_name"]


def test_the_token_is_no_credential_of_this_api(admin, factory):
    key = admin.post(PATH, json={}).json()
    assert_error(factory.client(key["token"]).get(PATH), 401, "ERR_INVALID_CREDENTIALS")


def test_endpoint_is_set_changed_and_unset_by_patch(admin):
    first, second = _endpoint(admin), _endpoint(admin)
    key = admin.post(PATH, json={"endpoint_id": first}).json()
    url = f"{PATH}/{key['id']}"
    moved = admin.patch(url, json={"endpoint_id": second}).json()
    assert moved["endpoint"]["id"] == second
    assert admin.patch(url, json={"endpoint_id": None}).json()["endpoint"]["id"] == second
    assert admin.patch(url, json={"endpoint_id": ""}).json()["endpoint"] is None


def test_deleting_the_endpoint_unsets_it(admin, factory):
    endpoint = _endpoint(admin)
    key = admin.post(PATH, json={"endpoint_id": endpoint}).json()
    assert admin.delete(f"/endpoints/{endpoint}").status_code == 204
    assert admin.get(f"{PATH}/{key['id']}").json()["endpoint"] is None
    assert _row(factory, key["id"]).endpoint_id is None


def test_unknown_or_foreign_endpoint_is_404(admin, other):
    theirs = _endpoint(other)
    for endpoint in (theirs, "ep_" + "0" * 27):
        body = assert_error(
            admin.post(PATH, json={"endpoint_id": endpoint}), 404, "ERR_REFERENCE_NOT_FOUND"
        )
        assert body["details"]["field"] == "endpoint_id"
    key = admin.post(PATH, json={}).json()
    refused = admin.patch(f"{PATH}/{key['id']}", json={"endpoint_id": theirs})
    assert_error(refused, 404, "ERR_REFERENCE_NOT_FOUND")
    assert admin.get(PATH).json()["ai_gateway_api_keys"] == [{**key, "token": None}]


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({"endpoint_id": "rd_" + "0" * 27}, "ERR_INVALID_FIELD"),
        ({"endpoint_id": 7}, "ERR_WRONG_TYPE"),
        ({"description": "é" * 128}, "ERR_FIELD_TOO_LONG"),  # 256 bytes
        ({"metadata": "€" * 1366}, "ERR_FIELD_TOO_LONG"),  # 4098 bytes
        ({"token": "mine"}, "ERR_UNKNOWN_FIELD"),
        ({"display_name": "x"}, "ERR_UNKNOWN_FIELD"),
        ({"provider_keys": []}, "ERR_UNKNOWN_FIELD"),
    ],
)
def test_bad_bodies_are_400_on_create_and_patch(admin, body, code):
    field = next(iter(body))
    assert assert_error(admin.post(PATH, json=body), 400, code)["details"]["field"] == field
    key = admin.post(PATH, json={"description": "kept"}).json()
    refused = admin.patch(f"{PATH}/{key['id']}", json=body)
    assert assert_error(refused, 400, code)["details"]["field"] == field
    assert admin.get(f"{PATH}/{key['id']}").json()["description"] == "kept"


def test_limits_accept_exactly_the_maximum(admin):
    longest = {"description": "é" * 127 + "x", "metadata": "€" * 1365 + "x"}
    made = admin.post(PATH, json=longest)
    assert made.status_code == 201, made.text
    assert {k: made.json()[k] for k in longest} == longest


def test_a_bot_user_is_named_by_its_address(admin, factory):
    bot = admin.post("/service_users", json={"name": "assistant-ops"}).json()
    token = admin.post("/api_keys", json={"owner_id": bot["id"]}).json()["token"]
    as_bot = factory.client(token)
    key = admin.post(PATH, json={}).json()
    changed = as_bot.patch(f"{PATH}/{key['id']}", json={"metadata": "m"}).json()
    assert changed["created_by"] == {"id": admin.creds.principal_id, "uri": ""}
    ref = changed["last_updated_by"]
    assert ref == {"id": bot["id"], "uri": f"{BASE}/service_users/{bot['id']}"}
    # The Ref answers, with the credential that read it.
    assert as_bot.get(ref["uri"].removeprefix(BASE)).json()["id"] == bot["id"]
    # Keys belong to the account: another principal of it manages them too.
    assert as_bot.delete(f"{PATH}/{key['id']}").status_code == 204


def test_paging_newest_first_and_filter(admin):
    tag = uuid.uuid4().hex[:6]
    made = [admin.post(PATH, json={"description": f"{tag}-{i}"}).json()["id"] for i in range(5)]
    first = admin.get(PATH, params={"limit": 2}).json()
    assert [k["id"] for k in first["ai_gateway_api_keys"]] == made[::-1][:2]
    assert first["uri"] == f"{BASE}{PATH}"
    assert first["next_page_uri"] == f"{BASE}{PATH}?limit=2&before_id={made[3]}"
    seen, next_uri = [k["id"] for k in first["ai_gateway_api_keys"]], first["next_page_uri"]
    while next_uri:
        page = admin.get(next_uri.removeprefix(BASE)).json()
        seen += [k["id"] for k in page["ai_gateway_api_keys"]]
        next_uri = page["next_page_uri"]
    assert seen == made[::-1]
    alias = admin.get(PATH, params={"beforeId": made[2]}).json()
    assert [k["id"] for k in alias["ai_gateway_api_keys"]] == [made[1], made[0]]
    matched = admin.get(PATH, params={"filter": f'obj.description == "{tag}-3"'}).json()
    assert [k["id"] for k in matched["ai_gateway_api_keys"]] == [made[3]]
    by_ref = admin.get(PATH, params={"filter": "obj.endpoint == null"}).json()
    assert len(by_ref["ai_gateway_api_keys"]) == 5
    assert_error(
        admin.get(PATH, params={"filter": "obj.token_hash != ''"}), 400, "ERR_FILTER_UNKNOWN_FIELD"
    )


@pytest.mark.parametrize(
    "params",
    [{"limit": 0}, {"limit": 101}, {"before_id": "garbage"}, {"before_id": "ak_" + "0" * 27}],
)
def test_bad_paging_parameters_are_400(admin, params):
    assert_error(admin.get(PATH, params=params), 400, "ERR_INVALID_PARAMETER")


def test_unknown_id_is_404(admin):
    missing = f"{PATH}/aigk_" + "0" * 27
    assert_error(admin.get(missing), 404, "ERR_NOT_FOUND")
    assert_error(admin.patch(missing, json={"description": "x"}), 404, "ERR_NOT_FOUND")
    assert_error(admin.delete(missing), 404, "ERR_NOT_FOUND")


def test_another_account_cannot_see_or_touch_it(admin, other):
    key = admin.post(PATH, json={"description": "mine"}).json()
    url = f"{PATH}/{key['id']}"
    assert_error(other.get(url), 404, "ERR_NOT_FOUND")
    assert_error(other.patch(url, json={"description": "theirs"}), 404, "ERR_NOT_FOUND")
    assert_error(other.delete(url), 404, "ERR_NOT_FOUND")
    assert other.get(PATH).json()["ai_gateway_api_keys"] == []
    filtered = other.get(PATH, params={"filter": 'obj.description == "mine"'}).json()
    assert filtered["ai_gateway_api_keys"] == []
    assert admin.get(url).json()["description"] == "mine"
