"""Bot users (`/bot_users`) and service users (`/service_users`): one kind under two paths,
the account's `bot_` principals. Admins manage them, every principal reads them; an inactive
one's API keys are refused on the next request and work again once it is active; deleting one
deletes its keys and credentials."""

from __future__ import annotations

import pytest

from tests.factories import assert_error, ssh_keygen
from tunnelgw.models import ApiKey, Credential, Principal, SshCredential

BOTS, SERVICES = "/bot_users", "/service_users"
PATHS = (BOTS, SERVICES)


def _bot(session, path=SERVICES, **body):  # type: ignore[no-untyped-def]
    created = session.post(path, json=body)
    assert created.status_code == 201, created.text
    return created.json()


@pytest.mark.parametrize("path", PATHS)
def test_create_get_list_update_delete(admin, path):
    bot = _bot(admin, path, name="deployer")
    assert bot["id"].startswith("bot_")
    assert bot["uri"] == f"http://testserver{path}/{bot['id']}"
    assert (bot["name"], bot["active"]) == ("deployer", True)
    url = f"{path}/{bot['id']}"
    assert admin.get(url).json() == bot
    key = path.strip("/")
    assert admin.get(path).json()[key] == [bot]
    assert _bot(admin, path, name=None, active=None) | {"id": "", "uri": "", "created_at": ""} == {
        "id": "",
        "uri": "",
        "created_at": "",
        "name": "",
        "active": True,
    }
    paused = admin.patch(url, json={"id": bot["id"], "active": False, "name": None}).json()
    assert paused == {**bot, "active": False}
    assert admin.patch(url, json={"name": "renamed"}).json() == {**paused, "name": "renamed"}
    assert admin.delete(url).status_code == 204
    assert_error(admin.get(url), 404, "ERR_NOT_FOUND")
    assert_error(admin.delete(url), 404, "ERR_NOT_FOUND")


def test_one_kind_under_two_paths(admin):
    """A row made under either path answers under both, its `uri` naming the path asked."""
    old = _bot(admin, BOTS, name="old name")
    new = _bot(admin, SERVICES, name="new name", active=False)
    for bot in (old, new):
        for path in PATHS:
            got = admin.get(f"{path}/{bot['id']}").json()
            assert got == {**bot, "uri": f"http://testserver{path}/{bot['id']}"}
    assert [b["id"] for b in admin.get(BOTS).json()["bot_users"]] == [new["id"], old["id"]]
    assert [b["id"] for b in admin.get(SERVICES).json()["service_users"]] == [
        new["id"],
        old["id"],
    ]
    changed = admin.patch(f"{BOTS}/{new['id']}", json={"active": True}).json()
    assert changed["uri"].endswith(f"{BOTS}/{new['id']}")
    assert admin.get(f"{SERVICES}/{new['id']}").json()["active"] is True
    assert admin.delete(f"{SERVICES}/{old['id']}").status_code == 204
    assert_error(admin.get(f"{BOTS}/{old['id']}"), 404, "ERR_NOT_FOUND")


@pytest.mark.parametrize("path", PATHS)
def test_users_are_never_bot_users(admin, factory, path):
    user = factory.principal(admin.creds.account_id, "user")
    bot = factory.principal(admin.creds.account_id, "bot")
    listed = {b["id"] for b in admin.get(path).json()[path.strip("/")]}
    assert listed == {bot.creds.principal_id}
    for user_id in (admin.creds.principal_id, user.creds.principal_id):
        assert_error(admin.get(f"{path}/{user_id}"), 404, "ERR_NOT_FOUND")
        assert_error(admin.patch(f"{path}/{user_id}", json={"active": False}), 404, "ERR_NOT_FOUND")
        assert_error(admin.delete(f"{path}/{user_id}"), 404, "ERR_NOT_FOUND")
    # The user was not touched: its key still works.
    assert user.get("/api_keys").status_code == 200


@pytest.mark.parametrize("kind", ["user", "bot"])
def test_only_admins_manage_bot_users_every_principal_reads_them(admin, factory, kind):
    member = factory.principal(admin.creds.account_id, kind)
    bot = _bot(admin, name="managed")
    url = f"{SERVICES}/{bot['id']}"
    assert member.get(url).json() == bot
    assert bot["id"] in {b["id"] for b in member.get(BOTS).json()["bot_users"]}
    for refused in (
        member.post(SERVICES, json={"name": "mine"}),
        member.post(BOTS, json={}),
        member.patch(url, json={"active": False}),
        member.delete(url),
    ):
        assert_error(refused, 403, "ERR_PERMISSION_DENIED")
    # A bot user cannot reactivate or delete itself either.
    self_url = f"{BOTS}/{member.creds.principal_id}"
    if kind == "bot":
        assert member.get(self_url).json()["id"] == member.creds.principal_id
        assert_error(member.patch(self_url, json={"name": "me"}), 403, "ERR_PERMISSION_DENIED")
        assert_error(member.delete(self_url), 403, "ERR_PERMISSION_DENIED")
    assert admin.get(url).json() == bot
    assert len(admin.get(SERVICES).json()["service_users"]) == 1 + (kind == "bot")


def test_another_accounts_bot_users_are_not_found(admin, other):
    theirs = _bot(other, name="theirs")
    for path in PATHS:
        url = f"{path}/{theirs['id']}"
        assert_error(admin.get(url), 404, "ERR_NOT_FOUND")
        assert_error(admin.patch(url, json={"active": False}), 404, "ERR_NOT_FOUND")
        assert_error(admin.delete(url), 404, "ERR_NOT_FOUND")
        assert admin.get(path).json()[path.strip("/")] == []
    assert other.get(f"{BOTS}/{theirs['id']}").json()["active"] is True


def test_an_inactive_bot_users_keys_are_refused_until_it_is_active_again(admin):
    bot = _bot(admin, name="ci")
    made = admin.post("/api_keys", json={"owner_id": bot["id"]})
    assert made.status_code == 201, made.text
    token = made.json()["token"]
    assert admin.get("/api_keys", token=token).status_code == 200

    url = f"{SERVICES}/{bot['id']}"
    assert admin.patch(url, json={"active": False}).json()["active"] is False
    for refused in (
        admin.get("/api_keys", token=token),
        admin.get(f"/api_keys/{made.json()['id']}", token=token),  # the carried-row statement
        admin.post("/credentials", json={}, token=token),
    ):
        body = assert_error(refused, 403, "ERR_PRINCIPAL_INACTIVE")
        assert body["details"]["principal_id"] == bot["id"]
    # The key and its owner stay, readable by the account; an admin's own key is unaffected.
    assert admin.get(f"/api_keys/{made.json()['id']}").status_code == 200

    assert admin.patch(f"{BOTS}/{bot['id']}", json={"active": True}).status_code == 200
    assert admin.get("/api_keys", token=token).status_code == 200


def test_a_bot_user_made_inactive_at_creation_cannot_authenticate(admin):
    bot = _bot(admin, BOTS, active=False)
    token = admin.post("/api_keys", json={"owner_id": bot["id"]}).json()["token"]
    assert_error(admin.get(SERVICES, token=token), 403, "ERR_PRINCIPAL_INACTIVE")


def test_deleting_a_bot_user_deletes_its_keys_and_credentials(admin, factory, tmp_path):
    bot = _bot(admin, name="doomed")
    keeper = _bot(admin, name="keeper")
    owned = {"owner_id": bot["id"]}
    key = admin.post("/api_keys", json=owned).json()
    credential = admin.post("/credentials", json=owned).json()
    ssh = admin.post(
        "/ssh_credentials", json={**owned, "public_key": ssh_keygen(tmp_path, "ed25519")}
    ).json()
    kept = admin.post("/credentials", json={"owner_id": keeper["id"]}).json()
    assert admin.get("/api_keys", token=key["token"]).status_code == 200

    assert admin.delete(f"{SERVICES}/{bot['id']}").status_code == 204
    assert_error(admin.get("/api_keys", token=key["token"]), 401, "ERR_INVALID_CREDENTIALS")
    for url in (
        f"/api_keys/{key['id']}",
        f"/credentials/{credential['id']}",
        f"/ssh_credentials/{ssh['id']}",
    ):
        assert_error(admin.get(url), 404, "ERR_NOT_FOUND")
    assert admin.get(f"/credentials/{kept['id']}").status_code == 200

    async def rows(unit):  # type: ignore[no-untyped-def]
        found = {}
        for model in (Principal, ApiKey, Credential, SshCredential):
            found[model.__name__] = await unit.select_in(model, "id", [bot["id"], key["id"]])
        found["owned"] = [
            *await unit.select_in(ApiKey, "owner_id", [bot["id"]]),
            *await unit.select_in(Credential, "owner_id", [bot["id"]]),
            *await unit.select_in(SshCredential, "owner_id", [bot["id"]]),
        ]
        return found

    assert all(found == [] for found in factory.query(rows).values())


def test_lists_filter_and_page(admin):
    made = [_bot(admin, name=f"bot-{i}", active=i != 1) for i in range(3)]
    inactive = admin.get(SERVICES, params={"filter": "obj.active == false"}).json()
    assert [b["id"] for b in inactive["service_users"]] == [made[1]["id"]]
    named = admin.get(BOTS, params={"filter": 'obj.name.startsWith("bot-")', "limit": 2}).json()
    assert [b["id"] for b in named["bot_users"]] == [made[2]["id"], made[1]["id"]]
    assert "filter=" in named["next_page_uri"]
    first = admin.get(SERVICES, params={"limit": 1}).json()
    assert first["next_page_uri"].startswith(f"http://testserver{SERVICES}?")
    second = admin.get(first["next_page_uri"].removeprefix("http://testserver")).json()
    assert [b["id"] for b in second["service_users"]] == [made[1]["id"]]
    rest = admin.get(SERVICES, params={"before_id": made[1]["id"]}).json()
    assert ([b["id"] for b in rest["service_users"]], rest["next_page_uri"]) == (
        [made[0]["id"]],
        None,
    )
    for bad in ({"before_id": admin.creds.principal_id}, {"filter": "obj.owner_id == 1"}):
        assert admin.get(BOTS, params=bad).status_code == 400


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({"name": "x" * 256}, "ERR_FIELD_TOO_LONG"),
        ({"name": "é" * 128}, "ERR_FIELD_TOO_LONG"),  # 256 bytes
        ({"active": "yes"}, "ERR_WRONG_TYPE"),
        ({"is_admin": True}, "ERR_UNKNOWN_FIELD"),
    ],
)
def test_invalid_bodies(admin, body, code):
    assert_error(admin.post(SERVICES, json=body), 400, code)
    bot = _bot(admin)
    assert_error(admin.patch(f"{BOTS}/{bot['id']}", json=body), 400, code)


FIXTURE = """\
version: 1
api:
  service_users:
    - {ref: deployer, name: deployer}
  bot_users:
    - {ref: paused, active: false}
  api_keys:
    - {ref: deployer-key, owner_id: "@deployer"}
    - {ref: paused-key, owner_id: "@paused"}
  credentials:
    - {ref: agent, owner_id: "@deployer", acl: ["bind:*.example.com"]}
  ssh_credentials:
    - {ref: device, owner_id: "@paused", public_key: "%s"}
"""


def test_fixtures_create_bot_users_owning_keys_and_credentials(settings, admin, tmp_path):
    from tests.api.test_fixtures import _reset
    from tunnelgw import seeding

    path = tmp_path / "principals.yaml"
    path.write_text(FIXTURE % ssh_keygen(tmp_path, "ed25519"))
    summary = seeding.load(path, settings, admin.creds.account_id)
    labels = summary["labels"]
    assert set(summary["api_key_tokens"]) == {"deployer-key", "paused-key"}
    assert set(summary["credential_tokens"]) == {"agent"}
    assert summary["credential_tokens"]["agent"].startswith("tgwcr_")
    assert admin.get(f"{BOTS}/{labels['paused']}").json()["active"] is False
    credential = admin.get(f"/credentials/{labels['agent']}").json()
    assert (credential["owner_id"], credential["token"]) == (labels["deployer"], None)
    ssh = admin.get(f"/ssh_credentials/{labels['device']}").json()
    assert ssh["owner_id"] == labels["paused"]
    deployer_token = summary["api_key_tokens"]["deployer-key"]
    assert admin.get(SERVICES, token=deployer_token).status_code == 200
    paused = admin.get(SERVICES, token=summary["api_key_tokens"]["paused-key"])
    assert_error(paused, 403, "ERR_PRINCIPAL_INACTIVE")

    # A reset keeps the principals (bot users too) and API keys, not the credentials.
    deleted = _reset(settings, admin.creds.account_id)
    assert (deleted["credential"], deleted["ssh_credential"]) == (1, 1)
    assert "principal" not in deleted
    assert len(admin.get(SERVICES).json()["service_users"]) == 2
    assert admin.get(SERVICES, token=deployer_token).status_code == 200
