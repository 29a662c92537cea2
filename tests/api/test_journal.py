"""Issue 23: the request journal (`/_admin/requests`): each API request of an account, with
its secret body fields redacted, listed and counted with filters, per account, emptied by
reset."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests.factories import assert_error

HRB = "/backends/http_response"
JOURNAL = "/_admin/requests"
COUNT = "/_admin/requests/count"
TLS_KEY = "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIJ+DYvh6SEqVTm50DFtMDoQikTmiCqirVv9mWG9qfSnF\n-----END PRIVATE KEY-----\n"  # noqa: E501


def _journal(client: Any, **params: Any) -> list[dict[str, Any]]:
    response = client.get(JOURNAL, params=params)
    assert response.status_code == 200, response.text
    found: list[dict[str, Any]] = response.json()["requests"]
    return found


def _count(client: Any, **params: Any) -> int:
    response = client.get(COUNT, params=params)
    assert response.status_code == 200, response.text
    return int(response.json()["count"])


def test_each_api_request_is_recorded(admin):
    created = admin.post(HRB, json={"body": "hi", "status_code": 200, "description": "d"})
    assert created.status_code == 201
    listed = admin.get(HRB, params={"limit": 5})
    entries = _journal(admin)
    assert [(e["method"], e["path"], e["operation"], e["status"]) for e in entries] == [
        ("POST", HRB, "http_response_backends.create", 201),
        ("GET", HRB, "http_response_backends.list", 200),
    ]
    first, second = entries
    assert first["body"] == {"body": "hi", "status_code": 200, "description": "d"}
    assert first["body_bytes"] == len(created.request.content)
    assert first["query"] == ""
    assert second["query"] == "limit=5"
    assert first["request_id"] == created.headers["Operation-Id"]
    assert second["request_id"] == listed.headers["Operation-Id"]
    assert first["error_code"] is None
    assert second["body"] is None
    assert first["principal_id"] == admin.creds.principal_id
    assert first["api_key_id"] == admin.creds.api_key_id
    assert first["seq"] < second["seq"]
    assert first["at"] <= second["at"]
    assert all(e["duration_ms"] >= 0 for e in entries)


def test_errors_are_recorded_with_their_code_and_body(admin):
    missing = admin.get(f"{HRB}/hrb_0ERkzK3Nwthdfi0ERkzK3Nwth")
    assert_error(missing, 404, "ERR_NOT_FOUND")
    json_type = {"Content-Type": "application/json"}
    bad = admin.post(HRB, content=b'{"body": "x", "status_code": 200', headers=json_type)
    assert bad.status_code == 400
    wrong = admin.post(HRB, json={"body": 5, "status_code": 200})
    assert_error(wrong, 400, "ERR_WRONG_TYPE")
    entries = _journal(admin)
    assert [(e["status"], e["error_code"]) for e in entries] == [
        (404, "ERR_NOT_FOUND"),
        (400, bad.json()["error_code"]),
        (400, "ERR_WRONG_TYPE"),
    ]
    assert entries[0]["request_id"] == missing.json()["details"]["operation_id"]
    assert entries[1]["body"] is None
    assert entries[1]["body_bytes"] == 32
    assert entries[2]["body"] == {"body": 5, "status_code": 200}  # refused, still recorded


def test_a_body_of_any_json_value_is_recorded(admin):
    # A string or a number is a JSON column's value like an object (SQLite keeps a number's
    # text as a number); each is refused, and recorded as sent.
    json_type = {"Content-Type": "application/json"}
    bodies = [b'"hello"', b"12", b"1.5", b"true", b"null", b'"12"', b"[1]"]
    for body in bodies:
        assert admin.post(HRB, content=body, headers=json_type).status_code == 400
    assert [e["body"] for e in _journal(admin)] == ["hello", 12, 1.5, True, None, "12", [1]]


def test_secret_fields_are_redacted(admin):
    vault = admin.post("/vaults", json={"name": "journal"}).json()
    admin.post("/vault_secrets", json={"name": "k", "vault_id": vault["id"], "value": "hush-1"})
    admin.post("/tls_certificates", json={"certificate_pem": "x", "private_key_pem": TLS_KEY})
    target = {
        "kinesis": {
            "auth": {
                "creds": {
                    "aws_access_key_id": "AKIAIOSFODNN7EXAMPLE",
                    "aws_secret_access_key": "hush-2",
                }
            },
            "stream_arn": "arn:aws:kinesis:us-east-1:123456789012:stream/s",
        }
    }
    admin.post("/event_destinations", json={"format": "json", "target": target})
    text = admin.get(JOURNAL).text
    for secret in ("hush-1", "hush-2", "MC4CAQAwBQYDK2VwBCIEIJ"):
        assert secret not in text
    secret, certificate, destination = _journal(admin)[1:]
    assert secret["body"]["value"] == "<redacted>"
    assert secret["body"]["name"] == "k"
    assert certificate["body"] == {"certificate_pem": "x", "private_key_pem": "<redacted>"}
    creds = destination["body"]["target"]["kinesis"]["auth"]["creds"]
    assert creds == {
        "aws_access_key_id": "AKIAIOSFODNN7EXAMPLE",
        "aws_secret_access_key": "<redacted>",
    }


def test_filters_and_counts(admin):
    for n in range(3):
        admin.post(HRB, json={"body": str(n), "status_code": 200})
    admin.get(HRB)
    admin.get(f"{HRB}/hrb_0ERkzK3Nwthdfi0ERkzK3Nwth")
    admin.get("/api_keys")
    assert _count(admin) == 6
    cases: list[tuple[dict[str, Any], int]] = [
        ({"operation": "http_response_backends.create"}, 3),
        ({"method": "GET"}, 3),
        ({"path_prefix": "/backends/"}, 5),
        ({"path_prefix": f"{HRB}/hrb_"}, 1),
        ({"status": "201"}, 3),
        ({"status": "2xx"}, 5),
        ({"status": "4xx"}, 1),
        ({"error_code": "ERR_NOT_FOUND"}, 1),
        ({"method": "GET", "status": "200", "path_prefix": "/api_keys"}, 1),
    ]
    for params, expected in cases:
        assert _count(admin, **params) == expected, params
        assert len(_journal(admin, **params)) == expected, params
    newest = _journal(admin, limit=2)
    assert [e["path"] for e in newest] == [f"{HRB}/hrb_0ERkzK3Nwthdfi0ERkzK3Nwth", "/api_keys"]


def test_since_reads_the_accounts_clock(admin):
    admin.get(HRB)
    moved = admin.post("/_admin/clock", json={"advance_seconds": 86400}).json()
    later = datetime.fromisoformat(moved["now"].replace("Z", "+00:00"))
    admin.get("/api_keys")
    since = (later - timedelta(seconds=5)).isoformat()
    assert [e["path"] for e in _journal(admin, since=since)] == ["/api_keys"]
    assert _count(admin, since=since) == 1
    at = datetime.fromisoformat(_journal(admin)[-1]["at"].replace("Z", "+00:00"))
    assert at - datetime.now(UTC) > timedelta(hours=23)  # the account's time, not the real one


@pytest.mark.parametrize(
    ("params", "code"),
    [
        ({"since": "yesterday"}, "ERR_INVALID_PARAMETER"),
        ({"status": "20"}, "ERR_INVALID_PARAMETER"),
        ({"status": "6xx"}, "ERR_INVALID_PARAMETER"),
        ({"method": "TRACE"}, "ERR_INVALID_PARAMETER"),
        ({"limit": "0"}, "ERR_INVALID_PARAMETER"),
        ({"colour": "blue"}, "ERR_INVALID_PARAMETER"),
    ],
)
def test_bad_filters_are_refused(admin, params, code):
    assert_error(admin.get(JOURNAL, params=params), 400, code)
    if "limit" not in params:  # the count takes every filter but `limit`
        assert_error(admin.get(COUNT, params=params), 400, code)


def test_what_is_not_recorded(admin, factory):
    admin.get("/_admin/clock")
    admin.get("/_admin/faults")
    anonymous = admin.get(HRB, token=None)
    assert_error(anonymous, 401, "ERR_AUTHENTICATION_REQUIRED")
    assert_error(admin.get(HRB, token="tgw_wrong"), 401, "ERR_INVALID_CREDENTIALS")
    assert _journal(admin) == []
    user = factory.principal(admin.creds.account_id, admin=False)
    user.get(HRB)
    assert [e["principal_id"] for e in _journal(admin)] == [user.creds.principal_id]


def test_accounts_see_only_their_own_requests(admin, other):
    admin.get(HRB)
    other.get("/api_keys")
    other.get("/api_keys")
    assert [e["path"] for e in _journal(admin)] == [HRB]
    assert _count(other) == 2
    assert _count(admin) == 1


def test_reset_and_clear_empty_the_journal(admin):
    admin.get(HRB)
    assert _count(admin) == 1
    assert admin.post("/_admin/reset").status_code == 200
    assert _count(admin) == 0
    deleted = admin.post("/_admin/reset").json()["deleted"]
    assert deleted["request_journal"] == 0
    admin.get(HRB)
    admin.get(HRB)
    assert admin.delete(JOURNAL).status_code == 204
    assert _journal(admin) == []
    admin.get(HRB)
    assert _count(admin) == 1


def test_only_admins_read_the_journal(admin, factory):
    user = factory.principal(admin.creds.account_id, admin=False)
    for method, path in (("GET", JOURNAL), ("GET", COUNT), ("DELETE", JOURNAL)):
        assert_error(user.request(method, path), 403, "ERR_PERMISSION_DENIED")


def test_a_private_key_in_the_wrong_field_is_redacted_too(admin):
    pem = TLS_KEY
    assert_error(
        admin.post("/certificate_authorities", json={"ca_pem": pem}), 400, "ERR_NOT_A_CERTIFICATE"
    )
    (entry,) = _journal(admin)
    assert entry["body"] == {"ca_pem": "<redacted>"}
