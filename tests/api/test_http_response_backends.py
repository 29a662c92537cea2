"""HTTP response backends: /backends/http_response (spec 4.2)."""

from __future__ import annotations

import pytest

from tests.factories import assert_error

PATH = "/backends/http_response"


def test_create_get_list_update_delete(admin):
    created = admin.post(
        PATH,
        json={
            "description": "maintenance",
            "metadata": "{}",
            "body": "Down",
            "headers": {"Content-Type": "text/plain", "X-Retry": "120"},
            "status_code": 503,
        },
    )
    assert created.status_code == 201
    backend = created.json()
    assert backend["id"].startswith("bkdhr_")
    assert backend["uri"] == f"http://testserver{PATH}/{backend['id']}"
    assert backend["headers"] == {"content-type": "text/plain", "x-retry": "120"}
    assert (backend["status_code"], backend["body"]) == (503, "Down")

    url = f"{PATH}/{backend['id']}"
    assert admin.get(url).json() == backend
    assert backend in admin.get(PATH).json()["backends"]

    updated = admin.patch(url, json={"status_code": 200, "body": "Up"}).json()
    assert (updated["status_code"], updated["body"]) == (200, "Up")
    assert updated["headers"] == backend["headers"]
    assert updated["description"] == "maintenance"

    assert admin.delete(url).status_code == 204
    assert_error(admin.get(url), 404, "ERR_NOT_FOUND")


def test_defaults_and_unset_values(admin):
    for body in ({}, {"status_code": 0, "headers": {}, "body": None}, {"status_code": None}, None):
        kwargs = {} if body is None else {"json": body}
        created = admin.post(PATH, **kwargs).json()
        assert created["status_code"] == 200
        assert created["headers"] is None
        assert created["body"] == ""
        assert (created["description"], created["metadata"]) == ("", "")


def test_patch_headers_replace_and_empty_map_clears(admin):
    url = admin.post(PATH, json={"headers": {"A": "1", "B": "2"}}).json()["uri"]
    path = url.removeprefix("http://testserver")
    assert admin.patch(path, json={"headers": {"C": "3"}}).json()["headers"] == {"c": "3"}
    assert admin.patch(path, json={"headers": None}).json()["headers"] == {"c": "3"}
    assert admin.patch(path, json={"status_code": 0}).json()["status_code"] == 200
    assert admin.patch(path, json={"headers": {}}).json()["headers"] is None


@pytest.mark.parametrize("status", [100, 599])
def test_status_code_bounds_accept(admin, status):
    assert admin.post(PATH, json={"status_code": status}).json()["status_code"] == status


@pytest.mark.parametrize(
    ("body", "code", "field"),
    [
        ({"status_code": 99}, "ERR_INVALID_FIELD", "status_code"),
        ({"status_code": 600}, "ERR_INVALID_FIELD", "status_code"),
        ({"status_code": -1}, "ERR_INVALID_FIELD", "status_code"),
        ({"status_code": 2**63}, "ERR_INVALID_FIELD", "status_code"),
        ({"status_code": "200"}, "ERR_WRONG_TYPE", "status_code"),
        ({"status_code": 200.5}, "ERR_WRONG_TYPE", "status_code"),
        ({"headers": {"Bad Name": "x"}}, "ERR_INVALID_FIELD", "headers.Bad Name"),
        ({"headers": {"": "x"}}, "ERR_INVALID_FIELD", "headers."),
        ({"headers": {"X-A": "line\r\nbreak"}}, "ERR_INVALID_FIELD", "headers.X-A"),
        ({"headers": {"X-A": 1}}, "ERR_WRONG_TYPE", "headers.X-A"),
        ({"headers": {"X-A": "1", "x-a": "2"}}, "ERR_INVALID_FIELD", "headers.x-a"),
        ({"headers": ["X-A"]}, "ERR_WRONG_TYPE", "headers"),
        ({"headers": {f"h{i}": "v" for i in range(65)}}, "ERR_FIELD_TOO_LONG", "headers"),
        ({"body": 1}, "ERR_WRONG_TYPE", "body"),
        ({"surprise": 1}, "ERR_UNKNOWN_FIELD", "surprise"),
    ],
)
def test_invalid_fields(admin, body, code, field):
    error = assert_error(admin.post(PATH, json=body), 400, code)
    assert error["details"]["field"] == field
    url = admin.post(PATH, json={}).json()["uri"].removeprefix("http://testserver")
    assert_error(admin.patch(url, json=body), 400, code)


def test_failed_create_writes_nothing(admin):
    before = admin.get(PATH).json()["backends"]
    admin.post(PATH, json={"headers": {"X-A": "1", "x-a": "2"}})
    assert admin.get(PATH).json()["backends"] == before


def test_failed_update_changes_nothing(admin):
    backend = admin.post(PATH, json={"body": "keep"}).json()
    url = backend["uri"].removeprefix("http://testserver")
    admin.patch(url, json={"body": "lost", "headers": {"X-A": "1", "x-a": "2"}})
    assert admin.get(url).json() == backend


def test_accounts_are_isolated(admin, other):
    backend = admin.post(PATH, json={"body": "mine"}).json()
    url = f"{PATH}/{backend['id']}"
    assert_error(other.get(url), 404, "ERR_NOT_FOUND")
    assert_error(other.patch(url, json={"body": "theirs"}), 404, "ERR_NOT_FOUND")
    assert_error(other.delete(url), 404, "ERR_NOT_FOUND")
    assert other.get(PATH).json()["backends"] == []
    assert admin.get(url).json()["body"] == "mine"


def test_list_pages(admin):
    made = [admin.post(PATH, json={"body": str(i)}).json()["id"] for i in range(3)]
    first = admin.get(PATH, params={"limit": 2}).json()
    assert [b["id"] for b in first["backends"]] == made[::-1][:2]
    second = admin.get(first["next_page_uri"].removeprefix("http://testserver")).json()
    assert [b["id"] for b in second["backends"]] == [made[0]]
    assert second["next_page_uri"] is None
    assert_error(
        admin.get(PATH, params={"before_id": made[0].replace("bkdhr", "ak")}),
        400,
        "ERR_INVALID_PARAMETER",
    )
