"""Secrets (/vault_secrets): CRUD, which vault (vault_id or vault_name, both, neither), the name
unique in the vault, the write-only value (encrypted under the key-encryption key, absent from
responses, the raw row and a dump of the database, unknown to filters), who made each change,
and `find_secret`, how traffic policies resolve `secrets.get("vault", "name")`."""

from __future__ import annotations

import uuid

import pytest

from tests.factories import assert_error, database_dump, in_dump
from tunnelgw.crypto import keys
from tunnelgw.models import VaultSecret
from tunnelgw.services import vaults

VAULTS = "/vaults"
SECRETS = "/vault_secrets"
BASE = "http://testserver"


def _vault(session, name="prod-vault"):  # type: ignore[no-untyped-def]
    created = session.post(VAULTS, json={"name": name})
    assert created.status_code == 201, created.text
    return created.json()


def _secret(session, **body):  # type: ignore[no-untyped-def]
    created = session.post(SECRETS, json={"name": "api-token", "value": "s3cr3t", **body})
    assert created.status_code == 201, created.text
    return created.json()


def test_secret_create_get_list_update_delete(admin):
    vault = _vault(admin)
    secret = _secret(admin, vault_id=vault["id"], description="billing", metadata="m")
    assert secret["id"].startswith("secret_")
    assert secret["uri"] == f"{BASE}{SECRETS}/{secret['id']}"
    assert secret["vault"] == {"id": vault["id"], "uri": vault["uri"]}
    assert secret["vault_name"] == "prod-vault"
    assert (secret["name"], secret["description"], secret["metadata"]) == (
        "api-token",
        "billing",
        "m",
    )
    assert "value" not in secret
    assert secret["updated_at"] == secret["created_at"]
    me = {"id": admin.creds.principal_id, "uri": ""}  # a user has no address in this API
    assert secret["created_by"] == secret["last_updated_by"] == me
    url = f"{SECRETS}/{secret['id']}"
    assert admin.get(url).json() == secret
    assert admin.get(SECRETS).json()["secrets"] == [secret]
    changed = admin.patch(url, json={"name": "billing-token", "description": None}).json()
    assert changed == {**secret, "name": "billing-token", "updated_at": changed["updated_at"]}
    assert admin.delete(url).status_code == 204
    assert_error(admin.get(url), 404, "ERR_NOT_FOUND")
    assert_error(admin.patch(url, json={"value": "x"}), 404, "ERR_NOT_FOUND")
    assert admin.delete(f"{VAULTS}/{vault['id']}").status_code == 204


def test_a_bot_users_change_names_it_by_a_ref_that_answers(admin, factory):
    bot = factory.principal(admin.creds.account_id, "bot")
    vault = _vault(admin)
    secret = _secret(admin, vault_id=vault["id"])
    changed = bot.patch(f"{SECRETS}/{secret['id']}", json={"value": "rotated"}).json()
    ref = changed["last_updated_by"]
    assert ref == {
        "id": bot.creds.principal_id,
        "uri": f"{BASE}/service_users/{bot.creds.principal_id}",
    }
    assert changed["created_by"]["id"] == admin.creds.principal_id
    assert admin.get(ref["uri"].removeprefix(BASE)).json()["id"] == bot.creds.principal_id
    created = _secret(bot, vault_name="prod-vault", name="by-bot")
    assert created["created_by"] == ref


def test_the_vault_by_id_by_name_or_both(admin):
    vault = _vault(admin)
    by_id = _secret(admin, vault_id=vault["id"], name="a")
    by_name = _secret(admin, vault_name="prod-vault", name="b")
    both = _secret(admin, vault_id=vault["id"], vault_name="prod-vault", name="c")
    # The platform's client sends "" for the one it was not given.
    empty = _secret(admin, vault_id="", vault_name="prod-vault", name="d")
    for secret in (by_id, by_name, both, empty):
        assert secret["vault"]["id"] == vault["id"]


def test_the_vault_named_twice_must_be_the_same(admin):
    vault = _vault(admin)
    _vault(admin, "staging")
    body = {"name": "n", "value": "v", "vault_id": vault["id"], "vault_name": "staging"}
    error = assert_error(admin.post(SECRETS, json=body), 400, "ERR_CONFLICTING_FIELDS")
    assert error["details"]["field"] == "vault_name"


@pytest.mark.parametrize(
    "vault", [{}, {"vault_id": "", "vault_name": ""}, {"vault_id": None, "vault_name": None}]
)
def test_a_secret_needs_a_vault(admin, vault):
    error = assert_error(
        admin.post(SECRETS, json={"name": "n", "value": "v", **vault}), 400, "ERR_MISSING_FIELD"
    )
    assert error["details"]["field"] == "vault_id"


def test_unknown_vaults(admin):
    unknown = "vault_" + "0" * 27
    body = {"name": "n", "value": "v"}
    by_id = admin.post(SECRETS, json={**body, "vault_id": unknown})
    assert assert_error(by_id, 404, "ERR_REFERENCE_NOT_FOUND")["details"]["field"] == "vault_id"
    by_name = admin.post(SECRETS, json={**body, "vault_name": "nope"})
    assert assert_error(by_name, 404, "ERR_REFERENCE_NOT_FOUND")["details"]["field"] == "vault_name"
    malformed = admin.post(SECRETS, json={**body, "vault_id": "ipp_" + "0" * 27})
    assert_error(malformed, 400, "ERR_INVALID_FIELD")


@pytest.mark.parametrize("field", ["name", "value"])
def test_name_and_value_are_required(admin, field):
    vault = _vault(admin)
    body = {"vault_id": vault["id"], "name": "n", "value": "v"}
    for missing, code in (
        ({k: v for k, v in body.items() if k != field}, "ERR_MISSING_FIELD"),
        ({**body, field: ""}, "ERR_INVALID_FIELD"),
        ({**body, field: None}, "ERR_WRONG_TYPE"),
    ):
        error = assert_error(admin.post(SECRETS, json=missing), 400, code)
        assert error["details"]["field"] == field
    secret = admin.post(SECRETS, json=body).json()
    emptied = admin.patch(f"{SECRETS}/{secret['id']}", json={field: ""})
    assert assert_error(emptied, 400, "ERR_INVALID_FIELD")["details"]["field"] == field


def test_the_value_limit_is_32_kib(admin):
    vault = _vault(admin)
    body = {"vault_id": vault["id"], "name": "big"}
    assert _secret(admin, **body, value="é" * 16384)["name"] == "big"
    too_long = admin.post(SECRETS, json={**body, "name": "bigger", "value": "é" * 16385})
    assert assert_error(too_long, 400, "ERR_FIELD_TOO_LONG")["details"]["field"] == "value"


def test_the_name_is_unique_in_its_vault_only(admin):
    vault, other_vault = _vault(admin), _vault(admin, "staging")
    first = _secret(admin, vault_id=vault["id"])
    again = admin.post(SECRETS, json={"vault_id": vault["id"], "name": "api-token", "value": "x"})
    assert assert_error(again, 409, "ERR_SECRET_NAME_TAKEN")["details"]["id"] == first["id"]
    assert _secret(admin, vault_id=other_vault["id"])["name"] == "api-token"
    second = _secret(admin, vault_id=vault["id"], name="other")
    renamed = admin.patch(f"{SECRETS}/{second['id']}", json={"name": "api-token"})
    assert_error(renamed, 409, "ERR_SECRET_NAME_TAKEN")
    same = admin.patch(f"{SECRETS}/{first['id']}", json={"name": "api-token"})
    assert same.status_code == 200, same.text


def test_the_vault_cannot_change(admin):
    vault = _vault(admin)
    secret = _secret(admin, vault_id=vault["id"])
    moved = admin.patch(f"{SECRETS}/{secret['id']}", json={"vault_id": vault["id"]})
    assert_error(moved, 400, "ERR_UNKNOWN_FIELD")


def _raw_row(factory, secret_id):  # type: ignore[no-untyped-def]
    async def read(unit):  # type: ignore[no-untyped-def]
        return await unit.get(VaultSecret, secret_id)

    return factory.query(read)


def test_the_value_is_stored_encrypted_and_never_shown(admin, factory, settings):
    value = f"plain-{uuid.uuid4().hex}"
    vault = _vault(admin)
    secret = _secret(admin, vault_id=vault["id"], value=value)
    url = f"{SECRETS}/{secret['id']}"
    responses = [
        admin.get(url),
        admin.get(SECRETS),
        admin.get(f"{VAULTS}/{vault['id']}/secrets"),
        admin.patch(url, json={"description": "d"}),
    ]
    for response in responses:
        assert value not in response.text
    row = _raw_row(factory, secret["id"])
    assert value.encode() not in row.wrapped_value
    assert vaults.reveal(row) == value
    # Bound to its row: the same blob on another secret's id does not decrypt.
    with pytest.raises(keys.UnwrapError):
        keys.unwrap(keys.current(), row.wrapped_value, b"secret_" + b"0" * 27)
    assert not in_dump(value.encode(), database_dump(settings))


def test_a_new_value_replaces_the_stored_one(admin, factory, settings):
    vault = _vault(admin)
    secret = _secret(admin, vault_id=vault["id"], value="first-value-123")
    before = _raw_row(factory, secret["id"])
    changed = admin.patch(f"{SECRETS}/{secret['id']}", json={"value": "second-value-456"})
    assert changed.status_code == 200, changed.text
    assert "second-value-456" not in changed.text
    after = _raw_row(factory, secret["id"])
    assert after.wrapped_value != before.wrapped_value
    assert vaults.reveal(after) == "second-value-456"
    assert not in_dump(b"second-value-456", database_dump(settings))


@pytest.mark.parametrize(
    "expression",
    ["obj.value == 's3cr3t'", "obj.value.startsWith('s')", "obj.wrapped_value != ''"],
)
def test_filters_do_not_know_the_value(admin, expression):
    vault = _vault(admin)
    _secret(admin, vault_id=vault["id"])
    for url in (SECRETS, f"{VAULTS}/{vault['id']}/secrets"):
        response = admin.get(url, params={"filter": expression})
        assert_error(response, 400, "ERR_FILTER_UNKNOWN_FIELD")


def test_filters_match_the_shown_fields(admin):
    vault, staging = _vault(admin), _vault(admin, "staging")
    _secret(admin, vault_id=vault["id"])
    wanted = _secret(admin, vault_id=staging["id"])
    found = admin.get(SECRETS, params={"filter": 'obj.vault_name == "staging"'}).json()
    assert found["secrets"] == [wanted]
    by_ref = admin.get(SECRETS, params={"filter": f'obj.vault.id == "{staging["id"]}"'}).json()
    assert by_ref["secrets"] == [wanted]


def test_other_accounts_secrets_are_not_found(admin, other):
    vault = _vault(admin)
    secret = _secret(admin, vault_id=vault["id"])
    url = f"{SECRETS}/{secret['id']}"
    assert_error(other.get(url), 404, "ERR_NOT_FOUND")
    assert_error(other.patch(url, json={"value": "mine"}), 404, "ERR_NOT_FOUND")
    assert_error(other.delete(url), 404, "ERR_NOT_FOUND")
    assert other.get(SECRETS).json()["secrets"] == []
    assert admin.get(url).status_code == 200


def test_find_secret_resolves_vault_and_secret_names(admin, other, factory):
    vault = _vault(admin)
    secret = _secret(admin, vault_id=vault["id"])
    _vault(other)
    account = admin.creds.account_id

    def find(account_id, vault_name, secret_name):  # type: ignore[no-untyped-def]
        async def run(unit):  # type: ignore[no-untyped-def]
            return await vaults.find_secret(unit, account_id, vault_name, secret_name)

        return factory.query(run)

    found = find(account, "prod-vault", "api-token")
    assert found is not None
    assert found.id == secret["id"]
    assert vaults.reveal(found) == "s3cr3t"
    assert find(account, "prod-vault", "nope") is None
    assert find(account, "nope", "api-token") is None
    assert find(other.creds.account_id, "prod-vault", "api-token") is None  # its vault is empty
    admin.patch(f"{VAULTS}/{vault['id']}", json={"name": "renamed"})
    assert find(account, "prod-vault", "api-token") is None
    assert find(account, "renamed", "api-token").id == secret["id"]


FIXTURE = """
version: 1
api:
  vaults:
    - {ref: prod, name: prod-vault}
  vault_secrets:
    - {ref: token, vault_id: "@prod", name: api-token, value: fixture-value-1}
    - {ref: hook, vault_name: prod-vault, name: webhook, value: fixture-value-2}
"""


def test_fixtures_create_vaults_and_secrets(settings, admin, factory, tmp_path):
    from tests.api.test_fixtures import _reset
    from tunnelgw import seeding

    path = tmp_path / "vaults.yaml"
    path.write_text(FIXTURE)
    summary = seeding.load(path, settings, admin.creds.account_id)
    assert "fixture-value" not in str(summary)
    labels = summary["labels"]
    assert summary["counts"] == {"api.vaults": 1, "api.vault_secrets": 2}
    listed = admin.get(f"{VAULTS}/{labels['prod']}/secrets").json()["secrets"]
    assert [s["id"] for s in listed] == [labels["hook"], labels["token"]]
    assert {s["vault"]["id"] for s in listed} == {labels["prod"]}
    assert vaults.reveal(_raw_row(factory, labels["token"])) == "fixture-value-1"
    # A reset deletes them (the secrets before their vault).
    deleted = _reset(settings, admin.creds.account_id)
    assert (deleted["vault"], deleted["vault_secret"]) == (1, 2)
    assert admin.get(VAULTS).json()["vaults"] == []


def test_a_fixture_secret_must_name_a_vault_item(settings, admin, tmp_path):
    from tunnelgw import seeding
    from tunnelgw.seeding import FixtureError

    path = tmp_path / "bad.yaml"
    path.write_text(
        "version: 1\napi:\n  ip_policies:\n    - {ref: p}\n  vault_secrets:\n"
        '    - {vault_id: "@p", name: n, value: v}\n'
    )
    with pytest.raises(FixtureError) as raised:
        seeding.load(path, settings, admin.creds.account_id)
    assert "label 'p' is a ip_policy; vault_id needs a vault" in str(raised.value)
