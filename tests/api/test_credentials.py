"""Tunnel credentials (`/credentials`): the token shown once and stored as its SHA-256 only,
ACL rules checked rule by rule, and ownership (tunnelgw.services.ownership) for them and for
SSH credentials: every principal reads them, a non-admin creates and manages only its own, an
admin any of the account."""

from __future__ import annotations

import hashlib

import pytest

from tests.factories import assert_error, database_dump, in_dump, ssh_keygen
from tunnelgw.models import Credential
from tunnelgw.storage import records

PATH = "/credentials"
ACTORS = ("admin", "admin2", "user", "bot")


def _made(session, path=PATH, **body):  # type: ignore[no-untyped-def]
    made = session.post(path, json=body)
    assert made.status_code == 201, made.text
    return made.json()


def _stored(factory, id_):  # type: ignore[no-untyped-def]
    async def read(unit):  # type: ignore[no-untyped-def]
        return await unit.get(Credential, id_)

    return factory.query(read)


def test_create_get_list_update_delete(admin):
    acl = ["bind:app.example.com", "bind:*.example.com", "bind:1.tcp.example.com:20002"]
    created = _made(admin, description="device 132", metadata='{"rack": 4}', acl=acl)
    assert created["id"].startswith("cr_")
    assert created["uri"] == f"http://testserver{PATH}/{created['id']}"
    assert created["token"].startswith("tgwcr_")
    assert len(created["token"]) == len("tgwcr_") + 43
    assert (created["acl"], created["owner_id"]) == (acl, admin.creds.principal_id)
    shown = {**created, "token": None}
    url = f"{PATH}/{created['id']}"
    assert admin.get(url).json() == shown
    assert admin.get(PATH).json()["credentials"] == [shown]
    assert admin.patch(url, json={"description": "moved", "acl": None}).json() == {
        **shown,
        "description": "moved",
    }
    narrowed = admin.patch(url, json={"id": created["id"], "acl": ["bind:env=prod"]}).json()
    assert narrowed["acl"] == ["bind:env=prod"]
    # `[]` removes every rule (the official client sends `acl` only when it is given).
    assert admin.patch(url, json={"acl": []}).json()["acl"] == []
    assert admin.delete(url).status_code == 204
    assert_error(admin.get(url), 404, "ERR_NOT_FOUND")


def test_defaults_and_empty_values(admin):
    made = _made(admin, description="", metadata="", acl=[], owner_id="")
    assert (made["description"], made["metadata"], made["acl"]) == ("", "", [])
    assert made["owner_id"] == admin.creds.principal_id
    assert _made(admin)["acl"] == []
    assert _made(admin, acl=["*"])["acl"] == ["*"]  # kept as sent


def test_the_token_is_shown_once_and_stored_as_its_sha256_only(admin, factory, settings):
    made = [_made(admin, description=f"c{i}") for i in range(2)]
    for credential in made:
        row = _stored(factory, credential["id"])
        digest = hashlib.sha256(credential["token"].encode()).hexdigest()
        assert row.token_hash == digest
        stored = [str(value) for value in records.as_dict(row).values()]
        assert digest in stored
        assert not any(credential["token"] in value for value in stored)
    dump = database_dump(settings)
    for credential in made:
        assert hashlib.sha256(credential["token"].encode()).hexdigest().encode() in dump
        assert not in_dump(credential["token"].encode(), dump)
        secret = credential["token"].removeprefix("tgwcr_").encode()
        assert not in_dump(secret, dump)


def test_a_credential_token_is_not_an_api_key(admin):
    token = _made(admin)["token"]
    assert_error(admin.get(PATH, token=token), 401, "ERR_INVALID_CREDENTIALS")


VALID_RULES = [
    "*",
    "bind:example.com",
    "bind:app.example.com",
    "bind:*.example.com",
    "bind:localhost",
    "bind:1.tcp.example.com:20002",
    "bind:db.example.com:65535",
    "bind:env=prod",
    "bind:*=prod",
    "bind:env=*",
    "bind:*=*",
    "bind:team.name-1=a b",
    "bind:env=",
]


def test_every_form_of_rule_is_accepted_and_kept_in_order(admin):
    made = _made(admin, acl=VALID_RULES)
    assert made["acl"] == VALID_RULES
    assert admin.get(f"{PATH}/{made['id']}").json()["acl"] == VALID_RULES


@pytest.mark.parametrize(
    "rule",
    [
        "",
        "bind",
        "bind:",
        "BIND:example.com",
        " bind:example.com",
        "bind:example.com ",
        "allow:example.com",
        "bind:*",
        "bind:*.*.example.com",
        "bind:app.*.example.com",
        "bind:-app.example.com",
        "bind:exa_mple.com",
        "bind:example..com",
        "bind:app.example.com:0",
        "bind:app.example.com:65536",
        "bind:app.example.com:",
        "bind:*.example.com:443",
        "bind::443",
        "bind:=prod",
        "bind:env/x=prod",
        "bind:env=pr\u0001od",
        f"bind:env={'v' * 256}",
        f"bind:{'a' * 64}.example.com",
        "**",
    ],
)
def test_an_invalid_rule_is_refused_naming_it(admin, rule):
    before = admin.get(PATH).json()["credentials"]
    refused = admin.post(PATH, json={"acl": ["bind:ok.example.com", rule]})
    if rule == "":
        assert_error(refused, 400, "ERR_INVALID_FIELD")  # minLength: the schema's own check
        return
    body = assert_error(refused, 400, "ERR_INVALID_ACL_RULE")
    assert body["details"]["field"] == "acl.1"
    assert admin.get(PATH).json()["credentials"] == before  # nothing written
    made = _made(admin, acl=["bind:ok.example.com"])
    url = f"{PATH}/{made['id']}"
    changed = admin.patch(url, json={"acl": [rule], "description": "not applied"})
    assert assert_error(changed, 400, "ERR_INVALID_ACL_RULE")["details"]["field"] == "acl.0"
    assert admin.get(url).json()["acl"] == ["bind:ok.example.com"]


def test_acl_limits(admin):
    assert_error(admin.post(PATH, json={"acl": ["*"] * 101}), 400, "ERR_FIELD_TOO_LONG")
    long_rule = "bind:" + ".".join(["a" * 63] * 8)
    assert_error(admin.post(PATH, json={"acl": [long_rule]}), 400, "ERR_FIELD_TOO_LONG")
    assert_error(admin.post(PATH, json={"acl": "bind:x.com"}), 400, "ERR_WRONG_TYPE")
    assert_error(admin.post(PATH, json={"token": "mine"}), 400, "ERR_UNKNOWN_FIELD")
    made = _made(admin)
    assert_error(
        admin.patch(f"{PATH}/{made['id']}", json={"owner_id": made["owner_id"]}),
        400,
        "ERR_UNKNOWN_FIELD",
    )


# Ownership, for both credential kinds: who may create for whom, change and delete whose.


@pytest.fixture
def team(admin, factory):  # type: ignore[no-untyped-def]
    account = admin.creds.account_id
    return {
        "admin": admin,
        "admin2": factory.principal(account, "user", admin=True),
        "user": factory.principal(account, "user"),
        "bot": factory.principal(account, "bot"),
    }


def _body(path, tmp_path, **fields):  # type: ignore[no-untyped-def]
    if path == "/ssh_credentials":
        fields.setdefault("public_key", ssh_keygen(tmp_path, "ed25519"))
    return fields


@pytest.mark.parametrize("path", [PATH, "/ssh_credentials"])
@pytest.mark.parametrize("owner", ACTORS)
@pytest.mark.parametrize("actor", ACTORS)
def test_who_may_change_and_delete_whose_credential(team, tmp_path, path, actor, owner):
    made = _made(team[owner], path, **_body(path, tmp_path, description=f"{owner}'s"))
    assert made["owner_id"] == team[owner].creds.principal_id
    url = f"{path}/{made['id']}"
    client = team[actor]
    assert client.get(url).status_code == 200
    assert made["id"] in {item["id"] for item in client.get(path).json()[path.strip("/")]}
    changed = client.patch(url, json={"acl": ["bind:x.example.com"]})
    deleted = client.delete(url)
    if actor.startswith("admin") or actor == owner:
        assert changed.status_code == 200, changed.text
        assert deleted.status_code == 204
        return
    body = assert_error(changed, 403, "ERR_NOT_OWNER")
    assert body["details"]["owner_id"] == team[owner].creds.principal_id
    assert_error(deleted, 403, "ERR_NOT_OWNER")
    assert team["admin"].get(url).json()["acl"] == []


@pytest.mark.parametrize("path", [PATH, "/ssh_credentials"])
def test_who_may_name_an_owner(team, other, tmp_path, path):
    user_id, bot_id = (team[name].creds.principal_id for name in ("user", "bot"))
    for actor in ("user", "bot"):
        named = team[actor].post(
            path, json=_body(path, tmp_path, owner_id=team["admin"].creds.principal_id)
        )
        assert_error(named, 403, "ERR_PERMISSION_DENIED")
        own = team[actor].post(
            path, json=_body(path, tmp_path, owner_id=team[actor].creds.principal_id)
        )
        assert own.status_code == 201, own.text
    for owner_id in (user_id, bot_id):
        made = _made(team["admin"], path, **_body(path, tmp_path, owner_id=owner_id))
        assert made["owner_id"] == owner_id
        # Ownership follows owner_id, not who created it.
        owner = team["user" if owner_id == user_id else "bot"]
        assert owner.delete(f"{path}/{made['id']}").status_code == 204
    for missing in ("usr_" + "0" * 27, other.creds.principal_id):
        refused = team["admin"].post(path, json=_body(path, tmp_path, owner_id=missing))
        body = assert_error(refused, 404, "ERR_REFERENCE_NOT_FOUND")
        assert body["details"]["field"] == "owner_id"
    assert_error(
        team["admin"].post(path, json=_body(path, tmp_path, owner_id="acct_x")),
        400,
        "ERR_INVALID_FIELD",
    )


@pytest.mark.parametrize("path", [PATH, "/ssh_credentials"])
def test_another_accounts_credentials_are_not_found(admin, other, tmp_path, path):
    theirs = _made(other, path, **_body(path, tmp_path))
    url = f"{path}/{theirs['id']}"
    assert_error(admin.get(url), 404, "ERR_NOT_FOUND")
    assert_error(admin.patch(url, json={"description": "x"}), 404, "ERR_NOT_FOUND")
    assert_error(admin.delete(url), 404, "ERR_NOT_FOUND")
    assert admin.get(path).json()[path.strip("/")] == []
    assert other.get(url).json()["description"] == ""


def test_lists_filter_by_owner_and_rule(admin, factory):
    bot = factory.principal(admin.creds.account_id, "bot")
    mine = _made(admin, acl=["bind:a.example.com"])
    _made(bot, acl=["bind:b.example.com"])
    by_owner = admin.get(PATH, params={"filter": f'obj.owner_id == "{admin.creds.principal_id}"'})
    assert [c["id"] for c in by_owner.json()["credentials"]] == [mine["id"]]
    by_rule = admin.get(PATH, params={"filter": '"bind:a.example.com" in obj.acl'})
    assert [c["id"] for c in by_rule.json()["credentials"]] == [mine["id"]]
    assert all(c["token"] is None for c in admin.get(PATH).json()["credentials"])
