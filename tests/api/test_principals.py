"""Principals and their API keys (tunnelgw.services.ownership): every principal of an account
reads all its keys; a non-admin changes and deletes only its own; an admin any key of the
account; so the keys that work as an admin, the last one included, go only by an admin's hand."""

from __future__ import annotations

import pytest

from tests.factories import assert_error

PATH = "/api_keys"

# Who acts, whose key: the principals of one account (`team` below).
ACTORS = ("admin", "admin2", "user", "bot")


@pytest.fixture
def team(admin, factory):
    """An account's principals, each with a client of its own: its first admin, a second
    admin user, a non-admin user and a (non-admin) bot."""
    account = admin.creds.account_id
    return {
        "admin": admin,
        "admin2": factory.principal(account, "user", admin=True),
        "user": factory.principal(account, "user"),
        "bot": factory.principal(account, "bot"),
    }


def _key_of(team, owner: str) -> dict:
    """A new key owned by `owner`, made by that principal itself."""
    made = team[owner].post(PATH, json={"description": f"{owner}'s"})
    assert made.status_code == 201, made.text
    assert made.json()["owner_id"] == team[owner].creds.principal_id
    return made.json()


def _allowed(actor: str, owner: str) -> bool:
    return actor.startswith("admin") or actor == owner


@pytest.mark.parametrize("owner", ACTORS)
@pytest.mark.parametrize("actor", ACTORS)
def test_who_may_change_and_delete_whose_key(team, actor, owner):
    key = _key_of(team, owner)
    url = f"{PATH}/{key['id']}"
    client = team[actor]
    # Reading is open to every principal of the account (the token is never shown again).
    read = client.get(url)
    assert read.status_code == 200
    assert read.json()["token"] is None
    assert key["id"] in {item["id"] for item in client.get(PATH).json()["keys"]}

    changed = client.patch(url, json={"description": f"by {actor}"})
    deleted = client.delete(url)
    if _allowed(actor, owner):
        assert changed.status_code == 200, changed.text
        assert changed.json()["description"] == f"by {actor}"
        assert deleted.status_code == 204
        assert_error(team["admin"].get(url), 404, "ERR_NOT_FOUND")
        return
    body = assert_error(changed, 403, "ERR_NOT_OWNER")
    assert body["details"]["owner_id"] == team[owner].creds.principal_id
    assert_error(deleted, 403, "ERR_NOT_OWNER")
    # Nothing changed, and the key still works.
    assert team["admin"].get(url).json()["description"] == f"{owner}'s"
    assert team[owner].client.get(PATH, token=key["token"]).status_code == 200


def test_a_non_admin_cannot_lock_the_admin_out(team):
    """The account's only admin key (the bootstrap's) survives every non-admin's attempt;
    an admin may delete it, after which no non-admin can mint an admin key either."""
    only = team["admin"]
    admin_key = f"{PATH}/{only.creds.api_key_id}"
    team["admin2"].delete(f"{PATH}/{team['admin2'].creds.api_key_id}")  # one admin key left
    for actor in ("user", "bot"):
        assert_error(team[actor].delete(admin_key), 403, "ERR_NOT_OWNER")
        assert_error(team[actor].patch(admin_key, json={"metadata": "x"}), 403, "ERR_NOT_OWNER")
    assert only.get(admin_key).status_code == 200

    # An admin's own hand may delete it (here: the key deleting itself).
    assert only.delete(admin_key).status_code == 204
    assert_error(only.get(PATH), 401, "ERR_INVALID_CREDENTIALS")
    assert_error(
        team["user"].post(PATH, json={"owner_id": only.creds.principal_id}),
        403,
        "ERR_PERMISSION_DENIED",
    )


def test_a_key_an_admin_made_for_a_principal_is_that_principals(team):
    """Ownership follows `owner_id`, not who created the key: a key an admin made for the user
    is the user's to change and delete, and not another non-admin's."""
    made = team["admin"].post(PATH, json={"owner_id": team["user"].creds.principal_id}).json()
    url = f"{PATH}/{made['id']}"
    assert_error(team["bot"].delete(url), 403, "ERR_NOT_OWNER")
    assert team["user"].patch(url, json={"description": "mine"}).status_code == 200
    assert team["user"].delete(url).status_code == 204


def test_another_accounts_key_stays_not_found_for_admins_too(team, other):
    key = other.post(PATH, json={}).json()
    for actor in ("admin", "user"):
        assert_error(team[actor].delete(f"{PATH}/{key['id']}"), 404, "ERR_NOT_FOUND")
        assert_error(team[actor].patch(f"{PATH}/{key['id']}", json={}), 404, "ERR_NOT_FOUND")
