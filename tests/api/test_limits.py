"""The same limits everywhere: `description` at most 255 and `metadata` at most 4096 bytes on
every resource that has them, on create and update; times a client sends are strictly RFC 3339
(offsets -23:59..+23:59) wherever it sends one."""

from __future__ import annotations

import pytest

from tests.creates import CREATES
from tests.factories import assert_error, ssh_keygen

TOO_LONG = {"description": "é" * 128, "metadata": "€" * 1366}  # 256 and 4098 bytes
LONGEST = {"description": "é" * 127 + "x", "metadata": "€" * 1365 + "x"}  # 255 and 4096


# Creates of resources without description and metadata (bot users have a `name`, limited
# to 255 bytes the same way: tests/api/test_bot_users.py).
WITHOUT_TEXT = {"bot_users.create", "service_users.create"}
# Abuse reports have metadata only, and cannot change (tests/api/test_abuse_reports.py).
WITHOUT_TEXT |= {"abuse_reports.create"}


@pytest.mark.parametrize("op_id", sorted(set(CREATES) - WITHOUT_TEXT))
def test_description_and_metadata_are_limited_in_bytes(admin, tmp_path, op_id):
    create = CREATES[op_id]
    for field, value in TOO_LONG.items():
        refused = create.post(admin, tmp_path, **{field: value})
        assert assert_error(refused, 400, "ERR_FIELD_TOO_LONG")["details"]["field"] == field
    made = create.post(admin, tmp_path, **LONGEST)
    assert made.status_code == 201, made.text
    assert {k: made.json()[k] for k in LONGEST} == LONGEST
    url = f"{create.path}/{made.json()['id']}"
    for field, value in TOO_LONG.items():
        refused = admin.patch(url, json={field: value})
        assert assert_error(refused, 400, "ERR_FIELD_TOO_LONG")["details"]["field"] == field
    assert {k: admin.get(url).json()[k] for k in LONGEST} == LONGEST


IMPOSSIBLE_TIMES = [
    "2026-01-01T00:00:00+99:99",  # the report's: once stored as 2025-12-27T19:21:00Z
    "2026-01-01T00:00:00+24:00",
    "2026-01-01T00:00:00-24:00",
    "2026-01-01T00:00:00+00:60",
    "2026-01-01T24:00:00Z",
    "2026-02-30T00:00:00Z",
    "2026-01-01 00:00:00Z",
    "2026-01-01T00:00Z",
]


@pytest.fixture
def ssh_ca(admin):
    return admin.post("/ssh_certificate_authorities", json={"private_key_type": "ed25519"}).json()


@pytest.mark.parametrize("field", ["valid_after", "valid_until"])
@pytest.mark.parametrize("text", IMPOSSIBLE_TIMES)
def test_ssh_certificate_times_are_strict(admin, ssh_ca, tmp_path, field, text):
    body = {
        "ssh_certificate_authority_id": ssh_ca["id"],
        "public_key": ssh_keygen(tmp_path, "ed25519"),
        field: text,
    }
    refused = admin.post("/ssh_user_certificates", json=body)
    assert assert_error(refused, 400, "ERR_INVALID_FIELD")["details"]["field"] == field
    assert admin.get("/ssh_user_certificates").json()["ssh_user_certificates"] == []


def test_the_widest_offsets_are_taken(admin, ssh_ca, tmp_path):
    body = {
        "ssh_certificate_authority_id": ssh_ca["id"],
        "public_key": ssh_keygen(tmp_path, "ed25519"),
        "valid_after": "2030-01-01T00:00:00+23:59",
        "valid_until": "2030-01-01T00:00:00-23:59",
    }
    made = admin.post("/ssh_user_certificates", json=body)
    assert made.status_code == 201, made.text
    assert (made.json()["valid_after"], made.json()["valid_until"]) == (
        "2029-12-31T00:01:00Z",
        "2030-01-01T23:59:00Z",
    )


@pytest.mark.parametrize("text", IMPOSSIBLE_TIMES)
def test_the_admin_clock_takes_only_rfc_3339(admin, text):
    before = admin.get("/_admin/clock").json()
    refused = admin.post("/_admin/clock", json={"set": text})
    assert assert_error(refused, 400, "ERR_INVALID_FIELD")["details"]["field"] == "set"
    assert admin.get("/_admin/clock").json()["offset_seconds"] == before["offset_seconds"]


def test_filter_times_are_strict(admin):
    refused = admin.get(
        "/api_keys", params={"filter": 'obj.created_at > timestamp("2026-01-01T00:00:00+99:99")'}
    )
    assert_error(refused, 400, "ERR_FILTER_SYNTAX")
