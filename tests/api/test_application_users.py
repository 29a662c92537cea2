"""Application users: /app/users (spec 4.11), read and delete only; deleting a user signs
it out (its sessions go in the same unit of work)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from tests.api.test_application_sessions import make_session
from tests.factories import assert_error
from tunnelgw.models import ApplicationUser

PATH = "/app/users"
BASE = "http://testserver"


def make_user(factory, account_id: str, **fields: Any) -> ApplicationUser:  # type: ignore[no-untyped-def]
    row: ApplicationUser = factory.row(ApplicationUser, account_id, **fields)
    return row


def test_renders_every_field(admin, factory):
    row = make_user(
        factory,
        admin.creds.account_id,
        identity_provider_name="Google",
        identity_provider_url="https://accounts.google.com",
        provider_user_id="104729385610293847561",
        username="alice",
        email="alice@example.com",
        name="Alice Example",
        created_at=datetime(2026, 11, 21, 10, 11, 14, 999_999, tzinfo=UTC),
        last_active=datetime(2026, 11, 21, 10, 41, 2, tzinfo=UTC),
        last_login=datetime(2026, 11, 21, 10, 11, 15, tzinfo=UTC),
    )
    got = admin.get(f"{PATH}/{row.id}")
    assert got.status_code == 200, got.text
    assert got.json() == {
        "id": row.id,
        "uri": f"{BASE}{PATH}/{row.id}",
        "identity_provider": {"name": "Google", "url": "https://accounts.google.com"},
        "provider_user_id": "104729385610293847561",
        "username": "alice",
        "email": "alice@example.com",
        "name": "Alice Example",
        "created_at": "2026-11-21T10:11:14Z",
        "last_active": "2026-11-21T10:41:02Z",
        "last_login": "2026-11-21T10:11:15Z",
    }


def test_empty_strings_for_unknown_fields(admin, factory):
    got = admin.get(f"{PATH}/{make_user(factory, admin.creds.account_id).id}").json()
    assert got["identity_provider"] == {"name": "", "url": ""}
    assert (got["provider_user_id"], got["username"], got["email"], got["name"]) == ("",) * 4


def test_list_pages(admin, factory):
    made = [make_user(factory, admin.creds.account_id).id for _ in range(3)]
    everything = admin.get(PATH).json()
    assert [u["id"] for u in everything["application_users"]] == made[::-1]
    assert (everything["uri"], everything["next_page_uri"]) == (f"{BASE}{PATH}", None)
    first = admin.get(PATH, params={"limit": 2}).json()
    assert [u["id"] for u in first["application_users"]] == made[::-1][:2]
    assert first["next_page_uri"] == f"{BASE}/app/users?limit=2&before_id={made[1]}"
    second = admin.get(first["next_page_uri"].removeprefix(BASE)).json()
    assert [u["id"] for u in second["application_users"]] == [made[0]]
    assert second["next_page_uri"] is None
    alias = admin.get(PATH, params={"beforeId": made[2], "limit": 1}).json()
    assert [u["id"] for u in alias["application_users"]] == [made[1]]
    wrong_prefix = made[0].replace("appusr_", "appses_", 1)
    assert_error(admin.get(PATH, params={"before_id": wrong_prefix}), 400, "ERR_INVALID_PARAMETER")


def test_delete_signs_the_user_out(admin, factory):
    account_id = admin.creds.account_id
    alice, bob = make_user(factory, account_id), make_user(factory, account_id)
    alice_sessions = [make_session(factory, account_id, application_user_id=alice.id) for _ in "ab"]
    bob_session = make_session(factory, account_id, application_user_id=bob.id)
    assert admin.delete(f"{PATH}/{alice.id}").status_code == 204
    assert_error(admin.get(f"{PATH}/{alice.id}"), 404, "ERR_NOT_FOUND")
    assert_error(admin.delete(f"{PATH}/{alice.id}"), 404, "ERR_NOT_FOUND")
    for session in alice_sessions:
        assert_error(admin.get(f"/app/sessions/{session.id}"), 404, "ERR_NOT_FOUND")
    listed = admin.get("/app/sessions").json()["application_sessions"]
    assert [s["id"] for s in listed] == [bob_session.id]
    assert [u["id"] for u in admin.get(PATH).json()["application_users"]] == [bob.id]


def test_accounts_are_isolated(admin, other, factory):
    user = make_user(factory, admin.creds.account_id)
    session = make_session(factory, admin.creds.account_id, application_user_id=user.id)
    url = f"{PATH}/{user.id}"
    assert_error(other.get(url), 404, "ERR_NOT_FOUND")
    assert_error(other.delete(url), 404, "ERR_NOT_FOUND")
    assert other.get(PATH).json()["application_users"] == []
    assert admin.get(url).status_code == 200
    assert admin.get(f"/app/sessions/{session.id}").status_code == 200


def test_read_only(admin):
    assert_error(admin.post(PATH, json={}), 405, "ERR_METHOD_NOT_ALLOWED")
    url = f"{PATH}/appusr_0ERZHb3hGoaYLY3tKA0JZBzonDH"
    assert_error(admin.patch(url, json={}), 405, "ERR_METHOD_NOT_ALLOWED")
    assert_error(admin.get(url), 404, "ERR_NOT_FOUND")
