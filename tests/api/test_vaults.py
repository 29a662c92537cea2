"""Vaults (/vaults): CRUD, the name unique in the account, renaming (its secrets follow),
deleting (refused while the vault holds secrets), a vault's secrets as a list, and isolation."""

from __future__ import annotations

import pytest

from tests.factories import assert_error

VAULTS = "/vaults"
SECRETS = "/vault_secrets"


def _vault(session, name="prod-vault", **body):  # type: ignore[no-untyped-def]
    created = session.post(VAULTS, json={"name": name, **body})
    assert created.status_code == 201, created.text
    return created.json()


def _secret(session, vault, name="api-token", value="s3cr3t", **body):  # type: ignore[no-untyped-def]
    created = session.post(
        SECRETS, json={"vault_id": vault["id"], "name": name, "value": value, **body}
    )
    assert created.status_code == 201, created.text
    return created.json()


def test_vault_create_get_list_update_delete(admin):
    vault = _vault(admin, description="prod", metadata='{"env": "prod"}')
    assert vault["id"].startswith("vault_")
    assert vault["uri"] == f"http://testserver{VAULTS}/{vault['id']}"
    assert (vault["name"], vault["description"], vault["metadata"]) == (
        "prod-vault",
        "prod",
        '{"env": "prod"}',
    )
    principal = admin.creds.principal_id
    assert vault["created_by"] == vault["last_updated_by"] == principal
    assert vault["updated_at"] == vault["created_at"]
    url = f"{VAULTS}/{vault['id']}"
    assert admin.get(url).json() == vault
    assert admin.get(VAULTS).json()["vaults"] == [vault]
    updated = admin.patch(url, json={"description": "production", "metadata": None}).json()
    assert updated == {**vault, "description": "production", "updated_at": updated["updated_at"]}
    assert admin.delete(url).status_code == 204
    assert_error(admin.get(url), 404, "ERR_NOT_FOUND")
    assert_error(admin.delete(url), 404, "ERR_NOT_FOUND")


def test_the_principal_that_changes_a_vault_is_recorded(admin, factory):
    bot = factory.principal(admin.creds.account_id, "bot", admin=True)
    vault = _vault(admin)
    changed = bot.patch(f"{VAULTS}/{vault['id']}", json={"description": "by the bot"}).json()
    assert changed["created_by"] == admin.creds.principal_id
    assert changed["last_updated_by"] == bot.creds.principal_id


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({}, "ERR_MISSING_FIELD"),
        ({"description": "x"}, "ERR_MISSING_FIELD"),
        ({"name": ""}, "ERR_INVALID_FIELD"),  # as the platform's client sends it by default
        ({"name": None}, "ERR_WRONG_TYPE"),
    ],
)
def test_a_vault_needs_a_name(admin, body, code):
    error = assert_error(admin.post(VAULTS, json=body), 400, code)
    assert error["details"]["field"] == "name"


@pytest.mark.parametrize("name", ["-lead", "has space", 'quote"d', "ümlaut", "a/b"])
def test_invalid_vault_names(admin, name):
    error = assert_error(admin.post(VAULTS, json={"name": name}), 400, "ERR_INVALID_FIELD")
    assert error["details"]["field"] == "name"


def test_vault_names_are_at_most_64_characters(admin):
    assert _vault(admin, "x" * 64)["name"] == "x" * 64
    assert_error(admin.post(VAULTS, json={"name": "x" * 65}), 400, "ERR_FIELD_TOO_LONG")


def test_wrong_types_and_unknown_fields(admin):
    assert_error(admin.post(VAULTS, json={"name": 5}), 400, "ERR_WRONG_TYPE")
    assert_error(admin.post(VAULTS, json={"name": "v", "colour": "red"}), 400, "ERR_UNKNOWN_FIELD")
    long = admin.post(VAULTS, json={"name": "v", "description": "é" * 128})
    assert_error(long, 400, "ERR_FIELD_TOO_LONG")


def test_the_name_is_unique_in_the_account_only(admin, other):
    first = _vault(admin)
    taken = assert_error(
        admin.post(VAULTS, json={"name": "prod-vault"}), 409, "ERR_VAULT_NAME_TAKEN"
    )
    assert taken["details"]["id"] == first["id"]
    assert _vault(other)["name"] == "prod-vault"  # another account's vault may share it
    second = _vault(admin, "staging")
    renamed = admin.patch(f"{VAULTS}/{second['id']}", json={"name": "prod-vault"})
    assert_error(renamed, 409, "ERR_VAULT_NAME_TAKEN")
    # Its own name again is no conflict; an empty one is invalid.
    same = admin.patch(f"{VAULTS}/{first['id']}", json={"name": "prod-vault"})
    assert same.status_code == 200, same.text
    empty = admin.patch(f"{VAULTS}/{first['id']}", json={"name": ""})
    assert_error(empty, 400, "ERR_INVALID_FIELD")
    # A deleted vault's name is free again.
    assert admin.delete(f"{VAULTS}/{first['id']}").status_code == 204
    assert _vault(admin)["name"] == "prod-vault"


def test_renaming_a_vault_renames_it_in_its_secrets(admin):
    vault = _vault(admin)
    secret = _secret(admin, vault)
    assert secret["vault_name"] == "prod-vault"
    assert admin.get(SECRETS).json()["secrets"] == [secret]
    renamed = admin.patch(f"{VAULTS}/{vault['id']}", json={"name": "production"}).json()
    assert renamed["name"] == "production"
    assert admin.get(secret["uri"].removeprefix("http://testserver")).json()["vault_name"] == (
        "production"
    )
    listed = admin.get(f"{VAULTS}/{vault['id']}/secrets").json()["secrets"]
    assert [s["vault_name"] for s in listed] == ["production"]
    everywhere = admin.get(SECRETS).json()["secrets"]  # a list page rendered before the rename
    assert [s["vault_name"] for s in everywhere] == ["production"]
    by_old = admin.post(SECRETS, json={"vault_name": "prod-vault", "name": "n", "value": "v"})
    assert_error(by_old, 404, "ERR_REFERENCE_NOT_FOUND")


def test_a_vault_that_holds_secrets_is_not_deleted(admin):
    vault = _vault(admin)
    secrets = [_secret(admin, vault, name=f"s{i}") for i in range(3)]
    url = f"{VAULTS}/{vault['id']}"
    error = assert_error(admin.delete(url), 409, "ERR_VAULT_NOT_EMPTY")
    assert error["details"]["secrets"].split(",") == [s["id"] for s in reversed(secrets)]
    assert error["details"]["id"] == vault["id"]
    assert admin.get(url).status_code == 200
    for secret in secrets:
        assert admin.delete(f"{SECRETS}/{secret['id']}").status_code == 204
    assert admin.delete(url).status_code == 204


def test_a_refused_delete_names_at_most_twenty_secrets(admin):
    vault = _vault(admin)
    for i in range(21):
        _secret(admin, vault, name=f"s{i}")
    error = assert_error(admin.delete(f"{VAULTS}/{vault['id']}"), 409, "ERR_VAULT_NOT_EMPTY")
    assert len(error["details"]["secrets"].split(",")) == 20
    assert "and more" in error["msg"]


def test_a_vaults_secrets_are_paged_and_filtered(admin):
    vault, elsewhere = _vault(admin), _vault(admin, "other-vault")
    made = [_secret(admin, vault, name=f"s{i}", metadata=str(i % 2)) for i in range(5)]
    _secret(admin, elsewhere, name="s0")
    url = f"{VAULTS}/{vault['id']}/secrets"
    first = admin.get(url, params={"limit": 2}).json()
    assert [s["id"] for s in first["secrets"]] == [made[4]["id"], made[3]["id"]]
    assert first["uri"] == f"http://testserver{url}"
    seen = [s["id"] for s in first["secrets"]]
    next_page = first["next_page_uri"]
    while next_page is not None:
        page = admin.get(next_page.removeprefix("http://testserver")).json()
        seen += [s["id"] for s in page["secrets"]]
        next_page = page["next_page_uri"]
    assert seen == [s["id"] for s in reversed(made)]
    odd = admin.get(url, params={"filter": 'obj.metadata == "1"', "limit": 1}).json()
    assert [s["id"] for s in odd["secrets"]] == [made[3]["id"]]
    rest = admin.get(odd["next_page_uri"].removeprefix("http://testserver")).json()
    assert [s["id"] for s in rest["secrets"]] == [made[1]["id"]]
    assert rest["next_page_uri"] is None
    assert admin.get(url).json()["secrets"] == list(reversed(made))


def test_a_vaults_secrets_list_checks_its_input(admin, other):
    vault = _vault(admin)
    url = f"{VAULTS}/{vault['id']}/secrets"
    assert_error(admin.get(url, params={"before_id": "vault_x"}), 400, "ERR_INVALID_PARAMETER")
    assert_error(
        admin.get(url, params={"filter": "obj.value == 'x'"}), 400, "ERR_FILTER_UNKNOWN_FIELD"
    )
    assert_error(admin.get(url, params={"colour": "red"}), 400, "ERR_INVALID_PARAMETER")
    assert_error(other.get(url), 404, "ERR_NOT_FOUND")
    assert_error(other.get(url, params={"filter": "true"}), 404, "ERR_NOT_FOUND")


def test_other_accounts_vaults_are_not_found(admin, other):
    vault = _vault(admin)
    url = f"{VAULTS}/{vault['id']}"
    assert_error(other.get(url), 404, "ERR_NOT_FOUND")
    assert_error(other.patch(url, json={"name": "mine"}), 404, "ERR_NOT_FOUND")
    assert_error(other.delete(url), 404, "ERR_NOT_FOUND")
    assert other.get(VAULTS).json()["vaults"] == []
    by_id = other.post(SECRETS, json={"vault_id": vault["id"], "name": "n", "value": "v"})
    assert_error(by_id, 404, "ERR_REFERENCE_NOT_FOUND")
    by_name = other.post(SECRETS, json={"vault_name": "prod-vault", "name": "n", "value": "v"})
    assert_error(by_name, 404, "ERR_REFERENCE_NOT_FOUND")


def test_vault_lists_filter(admin):
    _vault(admin, "alpha")
    beta = _vault(admin, "beta")
    found = admin.get(VAULTS, params={"filter": 'obj.name == "beta"'}).json()["vaults"]
    assert found == [beta]
