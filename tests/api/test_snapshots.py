"""Issue 23: account snapshots (`GET /_admin/snapshot`): an account's whole state as a fixture
document, loaded back (`POST /_admin/fixtures`) with the same ids and fields."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.creates import CREATES
from tests.factories import assert_error, ssh_keygen
from tunnelgw import seeding
from tunnelgw.core import settings as settings_module
from tunnelgw.core.spec import load as load_spec
from tunnelgw.crypto import keys
from tunnelgw.services import accounts, snapshots
from tunnelgw.services.auth import hash_token

EXAMPLE = Path(__file__).resolve().parents[2] / "fixtures" / "example.yaml"


def snapshot(client: Any, **params: Any) -> dict[str, Any]:
    response = client.get("/_admin/snapshot", params=params)
    assert response.status_code == 200, response.text
    document: dict[str, Any] = response.json()
    return document


def comparable(document: dict[str, Any]) -> bytes:
    """The document as bytes (sorted keys), without what describes the export itself."""
    section = {
        k: v for k, v in document["snapshot"].items() if k not in ("taken_at", "source_account_id")
    }
    return orjson.dumps(section, option=orjson.OPT_SORT_KEYS)


def build_world(settings: Any, client: Any, tmp_path: Path) -> dict[str, Any]:
    """The example fixture (every read-only kind) and one of every create; the tokens of
    the API key and tunnel credential made."""
    seeding.load(EXAMPLE, settings, client.creds.account_id)
    made: dict[str, Any] = {}
    for operation, create in CREATES.items():
        response = create.post(client, tmp_path)
        assert response.status_code == 201, (operation, response.text)
        made[operation] = response.json()
    return made


def views(client: Any) -> dict[str, Any]:
    """What every list operation (without path parameters) answers, and each item's GET."""
    seen: dict[str, Any] = {}
    for path, operations in load_spec()["paths"].items():
        get = operations.get("get")
        if get is None or "security" in get or "{" in path or "admin" in get["tags"]:
            continue
        body = client.get(path).json()
        seen[path] = body
        for items in (v for v in body.values() if isinstance(v, list)):
            for item in items:
                if (
                    isinstance(item, dict)
                    and "id" in item
                    and f"{path}/{{id}}" in load_spec()["paths"]
                ):
                    seen[f"{path}/{item['id']}"] = client.get(f"{path}/{item['id']}").json()
    return seen


@pytest.fixture
def world(settings, admin, tmp_path):
    made = build_world(settings, admin, tmp_path)
    yield made
    admin.post("/_admin/reset")


def test_export_reset_load_export_gives_the_same_document(admin, world):
    views(admin)  # reads complete certificate jobs: settle them before the snapshot
    first = snapshot(admin)
    before = views(admin)
    assert comparable(snapshot(admin)) == comparable(first)  # byte-identical
    admin.post("/_admin/reset")
    loaded = admin.post("/_admin/fixtures", json=first)
    assert loaded.status_code == 200, loaded.text
    again = snapshot(admin)
    assert comparable(again) == comparable(first)
    assert views(admin) == before


def test_the_world_fills_every_exported_table(admin, world):
    """Every table a snapshot exports has rows in the test world (so the round trip above
    covers each), and every table of the account is exported or left out on purpose."""
    tables = snapshot(admin)["snapshot"]["tables"]
    assert set(tables) == {str(table.name) for table in snapshots.tables()}
    for table in accounts.account_tables():  # every table of an account
        assert (table.name in tables) != (table.name in snapshots.EXCLUDED), table.name
    assert {"fault_rule", "fixture_load", "quota_usage"} <= snapshots.EXCLUDED


def test_secrets_are_left_out_with_a_note(admin, world, tmp_path):
    key_token = world["api_keys.create"]["token"]
    credential_token = world["credentials.create"]["token"]
    gateway_token = world["ai_gateway_api_keys.create"]["token"]
    document = snapshot(admin)
    text = orjson.dumps(document)
    secrets = (key_token, credential_token, gateway_token, "s3cr3t", hash_token(key_token))
    for secret in (*secrets, hash_token(gateway_token)):
        assert secret.encode() not in text
    section = document["snapshot"]
    assert section["secrets"] is None
    left = {(e["table"], e["field"]): e for e in section["left_out"]}
    assert set(left) == {
        ("ai_gateway_api_key", "token_hash"),
        ("api_key", "token_hash"),
        ("access_token", "token_hash"),
        ("credential", "token_hash"),
        ("ssh_certificate_authority", "wrapped_private_key"),
        ("tls_certificate", "wrapped_private_key"),
        ("vault_secret", "wrapped_value"),
        ("event_destination", "sealed_credential"),
    }
    assert "401" in left[("api_key", "token_hash")]["effect"]
    listed = {(e["table"], e["id"]) for e in section["left_out"]}
    assert ("api_key", world["api_keys.create"]["id"]) in listed
    for row in section["tables"]["api_key"]:
        assert "token_hash" not in row

    # Reset keeps API keys (and a load keeps their hashes): delete the world's key first.
    key_id = world["api_keys.create"]["id"]
    assert admin.delete(f"/api_keys/{key_id}").status_code == 204
    admin.post("/_admin/reset")
    assert admin.post("/_admin/fixtures", json=document).status_code == 200
    # The caller's own key kept its hash; the key loaded back has no working token.
    assert admin.get("/api_keys").status_code == 200
    other = admin.client.get("/api_keys", token=key_token)
    assert_error(other, 401, "ERR_INVALID_CREDENTIALS")
    assert admin.get(f"/api_keys/{world['api_keys.create']['id']}").status_code == 200
    # A CA without its private key cannot sign, and says why.
    ca = world["ssh_user_certificates.create"]["ssh_certificate_authority_id"]
    body = {"ssh_certificate_authority_id": ca, "public_key": ssh_keygen(tmp_path, "ed25519")}
    for path in ("/ssh_user_certificates", "/ssh_host_certificates"):
        refused = assert_error(admin.post(path, json=body), 409, "ERR_SECRET_LEFT_OUT")
        assert refused["details"] == {
            "id": ca,
            "field": "wrapped_private_key",
            "operation_id": refused["details"]["operation_id"],
        }
    # A credential without its token cannot connect an agent.
    connect = admin.post("/_admin/agent_sessions", json={"authtoken": credential_token})
    assert_error(connect, 403, "ERR_AGENT_AUTH_FAILED")
    # The loaded rows say again what they lack.
    assert snapshot(admin)["snapshot"]["left_out"] == section["left_out"]


def test_included_secrets_work_again_after_reset_and_load(admin, world, tmp_path):
    key_token = world["api_keys.create"]["token"]
    document = snapshot(admin, include_secrets="true")
    text = orjson.dumps(document)
    for secret in (key_token, "s3cr3t", hash_token(key_token)):
        assert secret.encode() not in text
    section = document["snapshot"]
    assert section["left_out"] == []
    assert section["secrets"]["kek_fingerprint"] == keys.fingerprint(keys.current())
    sealed = {(e["table"], e["field"]) for e in section["secrets"]["sealed"]}
    assert ("api_key", "token_hash") in sealed
    assert ("ssh_certificate_authority", "wrapped_private_key") in sealed

    # Reset keeps API keys: delete the world's key, so that the load writes it again.
    assert admin.delete(f"/api_keys/{world['api_keys.create']['id']}").status_code == 204
    assert admin.client.get("/api_keys", token=key_token).status_code == 401
    admin.post("/_admin/reset")
    assert admin.post("/_admin/fixtures", json=document).status_code == 200
    assert comparable(snapshot(admin, include_secrets="true")) == comparable(document)
    assert admin.client.get("/api_keys", token=key_token).status_code == 200
    ca = world["ssh_user_certificates.create"]["ssh_certificate_authority_id"]
    body = {"ssh_certificate_authority_id": ca, "public_key": ssh_keygen(tmp_path, "ed25519")}
    assert admin.post("/ssh_user_certificates", json=body).status_code == 201
    connect = admin.post(
        "/_admin/agent_sessions", json={"authtoken": world["credentials.create"]["token"]}
    )
    assert connect.status_code == 201, connect.text


def test_secrets_of_another_key_encryption_key_are_refused(admin, world):
    document = snapshot(admin, include_secrets="true")
    admin.post("/_admin/reset")
    forged = orjson.loads(orjson.dumps(document))
    forged["snapshot"]["secrets"]["kek_fingerprint"] = "0" * 32
    refused = assert_error(admin.post("/_admin/fixtures", json=forged), 400, "ERR_INVALID_FIXTURE")
    assert "another key-encryption key" in refused["msg"]
    assert "$.snapshot.secrets.kek_fingerprint" in refused["msg"]
    tampered = orjson.loads(orjson.dumps(document))
    entry = tampered["snapshot"]["secrets"]["sealed"][0]
    entry["id"] = tampered["snapshot"]["secrets"]["sealed"][-1]["id"]  # moved to another row
    refused = assert_error(
        admin.post("/_admin/fixtures", json=tampered), 400, "ERR_INVALID_FIXTURE"
    )
    assert "does not open with this server's key" in refused["msg"]
    kept = {"principal", "api_key", "access_token"}  # what reset keeps
    assert snapshot(admin)["snapshot"]["tables"].keys() == kept


def test_a_load_into_an_account_with_resources_is_refused(admin, world):
    document = snapshot(admin)
    refused = assert_error(
        admin.post("/_admin/fixtures", json=document), 400, "ERR_INVALID_FIXTURE"
    )
    assert "reset it first" in refused["msg"]
    assert refused["details"]["written"] == "false"
    assert comparable(snapshot(admin)) == comparable(document)


def test_ids_and_unique_values_of_another_account_are_refused(admin, other, world):
    document = snapshot(admin)
    before = snapshot(other)
    refused = assert_error(
        other.post("/_admin/fixtures", json=document), 400, "ERR_INVALID_FIXTURE"
    )
    tunnel = document["snapshot"]["tables"]["tunnel"][0]["id"]
    assert f"tunnel {tunnel!r} exists in another account" in refused["msg"]
    assert comparable(snapshot(other)) == comparable(before)  # nothing written
    # The ids free, but a reserved domain of the document reserved again by its account.
    domain = document["snapshot"]["tables"]["reserved_domain"][0]["domain"]
    admin.post("/_admin/reset")
    assert admin.post("/reserved_domains", json={"domain": domain}).status_code == 201
    refused = assert_error(
        other.post("/_admin/fixtures", json=document), 400, "ERR_INVALID_FIXTURE"
    )
    assert f"another account holds the reserved_domain with domain {domain!r}" in refused["msg"]
    assert f"tunnel {tunnel!r}" not in refused["msg"]
    assert comparable(snapshot(other)) == comparable(before)


def test_a_snapshot_document_holds_only_version_and_snapshot(admin):
    document = {
        "version": 1,
        "snapshot": {"format": 1, "tables": {}, "left_out": [], "secrets": None},
    }
    for _ in range(2):  # an account that stays empty takes it twice
        loaded = admin.post("/_admin/fixtures", json=document)
        assert loaded.status_code == 200, loaded.text
        assert loaded.json()["counts"] == {}
    mixed = {**document, "tunnels": [{"ref": "t"}]}
    refused = assert_error(admin.post("/_admin/fixtures", json=mixed), 400, "ERR_INVALID_FIXTURE")
    assert "holds only `version` and `snapshot`" in refused["msg"]
    bad = {
        "version": 1,
        "snapshot": {
            "format": 1,
            "tables": {"fault_rule": [{}], "tunnel": [{"id": "tn_x", "colour": "blue"}]},
            "left_out": [],
            "secrets": None,
        },
    }
    refused = assert_error(admin.post("/_admin/fixtures", json=bad), 400, "ERR_INVALID_FIXTURE")
    assert "unknown table 'fault_rule'" in refused["msg"]
    assert "no column 'colour'" in refused["msg"]
    assert "the column 'created_at' is missing" in refused["msg"]
    own = snapshot(admin)["snapshot"]["tables"]
    key = dict(own["api_key"][0], id="ak_0ERlLHj9fAyHnYtqgcmbYb5GG0Z")  # no note on its hash
    tunnel = {
        "id": "tn_0ERlLHj9fAyHnYtqgcmbYb5GG0Z",
        "created_at": "yesterday",
        "description": None,
        "metadata": 5,
        "public_url": "",
        "started_at": "2026-01-01T00:00:00Z",
        "proto": "https",
        "region": "us",
        "labels": {},
        "forwards_to": "",
        "endpoint_id": None,
        "tunnel_session_id": None,
    }
    bad["snapshot"]["tables"] = {"api_key": [key], "tunnel": [tunnel]}
    stray = {"table": "tunnel", "id": tunnel["id"], "field": "metadata"}  # not a secret
    bad["snapshot"]["left_out"] = [stray]
    refused = assert_error(admin.post("/_admin/fixtures", json=bad), 400, "ERR_INVALID_FIXTURE")
    assert refused["details"]["problems"] == "5", refused["msg"]
    for problem in (
        "$.snapshot.tables.api_key[0]: the snapshot neither carries nor leaves out its "
        "'token_hash'",
        "$.snapshot.tables.tunnel[0].created_at: 'yesterday' is not an RFC 3339 time",
        "$.snapshot.tables.tunnel[0].description: must not be null",
        "$.snapshot.tables.tunnel[0].metadata: 5 is not of the column's type (Text)",
        "$.snapshot.left_out[0]: names no secret column of a row in `tables`",
    ):
        assert problem in refused["msg"]


def test_snapshots_are_for_admins_with_the_admin_api(factory, admin):
    user = factory.principal(admin.creds.account_id, admin=False)
    assert_error(user.get("/_admin/snapshot"), 403, "ERR_PERMISSION_DENIED")
    assert_error(
        admin.get("/_admin/snapshot", params={"include_secrets": "yes"}),
        400,
        "ERR_INVALID_PARAMETER",
    )


def test_a_loaded_api_restriction_applies_again(admin):
    policy = admin.post("/ip_policies", json={}).json()["id"]
    rule = {"ip_policy_id": policy, "cidr": "10.0.0.0/8", "action": "allow"}
    assert admin.post("/ip_policy_rules", json=rule).status_code == 201
    body = {"type": "api", "enforced": True, "ip_policy_ids": [policy]}
    assert admin.post("/ip_restrictions", json=body).status_code == 201
    assert_error(admin.get("/api_keys"), 403, "ERR_IP_RESTRICTED")
    document = snapshot(admin)  # the admin API still answers
    admin.post("/_admin/reset")
    assert admin.get("/api_keys").status_code == 200
    assert admin.post("/_admin/fixtures", json=document).status_code == 200
    assert_error(admin.get("/api_keys"), 403, "ERR_IP_RESTRICTED")  # the account's summary
    admin.post("/_admin/reset")


@pytest.mark.inprocess  # sets the serving app's settings
def test_loaded_rows_count_toward_the_quotas(admin, monkeypatch):
    for _ in range(3):
        assert admin.post("/backends/http_response", json={}).status_code == 201
    document = snapshot(admin)
    admin.post("/_admin/reset")
    # A bound left high by a create and a delete (quotas read a bound, not a count).
    made = admin.post("/backends/http_response", json={}).json()
    assert admin.delete(f"/backends/http_response/{made['id']}").status_code == 204
    monkeypatch.setattr(settings_module.current(), "quotas", "http_response_backend=3")
    loaded = admin.post("/_admin/fixtures", json=document)  # direct rows: never refused
    assert loaded.json()["counts"]["http_response_backend"] == 3
    refused = admin.post("/backends/http_response", json={})
    assert_error(refused, 409, "ERR_QUOTA_EXCEEDED")
    admin.post("/_admin/reset")
