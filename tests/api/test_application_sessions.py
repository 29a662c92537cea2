"""Application sessions: /app/sessions (spec 4.10), read and delete only; rows are made by
Factory.row."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests.factories import assert_error
from tunnelgw.models import ApplicationSession
from tunnelgw.models.application_session import browser_session_api

PATH = "/app/sessions"
BASE = "http://testserver"
USER = "appusr_0ERZHb3hGoaYLY3tKA0JZBzonDH"
ENDPOINT = "ep_0ERZHb3h9qLJ2PbQVel0iN6pagP"
EDGE = "edghts_0ERZHb3hCJfGRVvOGK8lSdAv8vQ"
ROUTE = "edghtsrt_0ERZHb3hGoaYLY3tKA0JZBzonDI"
FULL_BROWSER_SESSION = {
    "user_agent": {
        "raw": "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0",
        "browser_name": "Firefox",
        "browser_version": "128.0",
        "device_type": "desktop",
        "os_name": "Linux",
        "os_version": "6.1",
    },
    "ip_address": "203.0.113.7",
    "location": {
        "country_code": "DE",
        "latitude": 52.52,
        "longitude": 13.405,
        "lat_long_radius_km": 20,
    },
}
EMPTY_BROWSER_SESSION = {
    "user_agent": {
        "raw": "",
        "browser_name": "",
        "browser_version": "",
        "device_type": "",
        "os_name": "",
        "os_version": "",
    },
    "ip_address": "",
    "location": {"country_code": "", "latitude": 0, "longitude": 0, "lat_long_radius_km": 0},
}


def make_session(factory, account_id: str, **fields: Any) -> ApplicationSession:  # type: ignore[no-untyped-def]
    values: dict[str, Any] = {
        "application_user_id": USER,
        "endpoint_id": ENDPOINT,
        "expires_at": datetime.now(UTC) + timedelta(days=1),
        **fields,
    }
    row: ApplicationSession = factory.row(ApplicationSession, account_id, **values)
    return row


def test_edge_session_renders_every_field(admin, factory):
    row = make_session(
        factory,
        admin.creds.account_id,
        public_url="https://app.example.com",
        browser_session=FULL_BROWSER_SESSION,
        edge_id=EDGE,
        route_id=ROUTE,
        created_at=datetime(2026, 11, 21, 10, 11, 14, 500_000, tzinfo=UTC),
        last_active=datetime(2026, 11, 21, 10, 41, 2, tzinfo=UTC),
        expires_at=datetime(2026, 11, 22, 10, 11, 14, tzinfo=UTC),
    )
    got = admin.get(f"{PATH}/{row.id}")
    assert got.status_code == 200, got.text
    assert got.json() == {
        "id": row.id,
        "uri": f"{BASE}{PATH}/{row.id}",
        "public_url": "https://app.example.com",
        "browser_session": FULL_BROWSER_SESSION,
        "application_user": {"id": USER, "uri": f"{BASE}/app/users/{USER}"},
        "created_at": "2026-11-21T10:11:14Z",
        "last_active": "2026-11-21T10:41:02Z",
        "expires_at": "2026-11-22T10:11:14Z",
        "endpoint": {"id": ENDPOINT, "uri": f"{BASE}/endpoints/{ENDPOINT}"},
        "edge": {"id": EDGE, "uri": f"{BASE}/edges/https/{EDGE}"},
        "route": {"id": ROUTE, "uri": f"{BASE}/edges/https/{EDGE}/routes/{ROUTE}"},
    }


def test_agent_initiated_session_has_no_edge_or_route(admin, factory):
    row = make_session(factory, admin.creds.account_id)
    got = admin.get(f"{PATH}/{row.id}").json()
    assert (got["edge"], got["route"]) == (None, None)
    assert got["public_url"] == ""
    assert got["browser_session"] == EMPTY_BROWSER_SESSION


@pytest.mark.parametrize(
    ("stored", "shown"),
    [
        ({}, EMPTY_BROWSER_SESSION),
        (
            {"ip_address": "198.51.100.1", "user_agent": {"browser_name": "Safari"}},
            {
                **EMPTY_BROWSER_SESSION,
                "ip_address": "198.51.100.1",
                "user_agent": {**EMPTY_BROWSER_SESSION["user_agent"], "browser_name": "Safari"},
            },
        ),
        (
            {"location": {"latitude": 1, "country_code": "FR"}},
            {
                **EMPTY_BROWSER_SESSION,
                "location": {
                    **EMPTY_BROWSER_SESSION["location"],
                    "latitude": 1.0,
                    "country_code": "FR",
                },
            },
        ),
        (
            # Mistyped or out-of-range values read as unset.
            {
                "user_agent": "Firefox",
                "ip_address": 7,
                "location": {"latitude": "52", "longitude": True, "lat_long_radius_km": -3},
            },
            EMPTY_BROWSER_SESSION,
        ),
    ],
)
def test_browser_session_is_normalised(admin, factory, stored, shown):
    row = make_session(factory, admin.creds.account_id, browser_session=stored)
    assert admin.get(f"{PATH}/{row.id}").json()["browser_session"] == shown


def test_browser_session_numbers_are_json_safe():
    shown = browser_session_api(
        {"location": {"latitude": 10**400, "longitude": float("nan"), "lat_long_radius_km": 2**64}}
    )
    assert shown["location"] == EMPTY_BROWSER_SESSION["location"]
    assert browser_session_api(None) == EMPTY_BROWSER_SESSION


def test_route_without_edge_is_null(admin, factory):
    row = make_session(factory, admin.creds.account_id, route_id=ROUTE)
    assert admin.get(f"{PATH}/{row.id}").json()["route"] is None


def test_list_pages(admin, factory):
    made = [make_session(factory, admin.creds.account_id).id for _ in range(3)]
    everything = admin.get(PATH).json()
    assert [s["id"] for s in everything["application_sessions"]] == made[::-1]
    assert (everything["uri"], everything["next_page_uri"]) == (f"{BASE}{PATH}", None)
    first = admin.get(PATH, params={"limit": 2}).json()
    assert [s["id"] for s in first["application_sessions"]] == made[::-1][:2]
    assert first["next_page_uri"] == f"{BASE}/app/sessions?limit=2&before_id={made[1]}"
    second = admin.get(first["next_page_uri"].removeprefix(BASE)).json()
    assert [s["id"] for s in second["application_sessions"]] == [made[0]]
    assert second["next_page_uri"] is None
    alias = admin.get(PATH, params={"beforeId": made[1]}).json()
    assert [s["id"] for s in alias["application_sessions"]] == [made[0]]
    wrong_prefix = made[0].replace("appses_", "appusr_", 1)
    assert_error(admin.get(PATH, params={"before_id": wrong_prefix}), 400, "ERR_INVALID_PARAMETER")


def test_delete(admin, factory):
    kept, gone = (make_session(factory, admin.creds.account_id) for _ in range(2))
    assert admin.delete(f"{PATH}/{gone.id}").status_code == 204
    assert_error(admin.get(f"{PATH}/{gone.id}"), 404, "ERR_NOT_FOUND")
    assert_error(admin.delete(f"{PATH}/{gone.id}"), 404, "ERR_NOT_FOUND")
    assert [s["id"] for s in admin.get(PATH).json()["application_sessions"]] == [kept.id]


def test_accounts_are_isolated(admin, other, factory):
    row = make_session(factory, admin.creds.account_id)
    url = f"{PATH}/{row.id}"
    assert_error(other.get(url), 404, "ERR_NOT_FOUND")
    assert_error(other.delete(url), 404, "ERR_NOT_FOUND")
    assert other.get(PATH).json()["application_sessions"] == []
    assert admin.get(url).status_code == 200


def test_read_only(admin):
    assert_error(admin.post(PATH, json={}), 405, "ERR_METHOD_NOT_ALLOWED")
    url = f"{PATH}/appses_0ERZHb3hGoaYLY3tKA0JZBzonDG"
    assert_error(admin.patch(url, json={}), 405, "ERR_METHOD_NOT_ALLOWED")
    assert_error(admin.get(url), 404, "ERR_NOT_FOUND")
