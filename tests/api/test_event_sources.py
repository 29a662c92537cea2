"""Event sources: /event_subscriptions/{subscription_id}/sources (spec 4.12). Subscriptions
are made by Factory.row."""

from __future__ import annotations

import pytest

from tests.factories import assert_error
from tunnelgw.core.spec import load as load_spec
from tunnelgw.models import EventSubscription

BASE = "http://testserver"
SPEC = load_spec()
CATALOG = SPEC["components"]["schemas"]["EventType"]["enum"]
RESOURCES = [
    "api_key",
    "agent_ingress",
    "application_session",
    "application_user",
    "certificate_authority",
    "credential",
    "endpoint",
    "endpoint_configuration",
    "event_destination",
    "event_subscription",
    "http_response_backend",
    "ip_policy",
    "ip_policy_rule",
    "ip_restriction",
    "reserved_addr",
    "reserved_domain",
    "ssh_certificate_authority",
    "ssh_credential",
    "ssh_host_certificate",
    "ssh_user_certificate",
    "tls_certificate",
    "tls_edge",
    "tunnel_group_backend",
    "https_edge",
    "https_edge_route",
    "tcp_edge",
    "tunnel",
    "vault",
    "secret",
]
TRAFFIC = ["http_request_complete.v0", "tcp_connection_closed.v0"]
UNKNOWN_ESB = "esb_0ERZHb3hGoaYLY3tKA0JZBzonDJ"


@pytest.fixture
def esb(admin, factory) -> str:  # type: ignore[no-untyped-def]
    """The sources path of a new subscription of the admin's account."""
    subscription = factory.row(EventSubscription, admin.creds.account_id)
    return f"/event_subscriptions/{subscription.id}/sources"


def test_catalog():
    expected = [f"{r}_{v}.v0" for r in RESOURCES for v in ("created", "updated", "deleted")]
    assert [*expected, *TRAFFIC] == CATALOG
    assert {"ip_policy_created.v0", "ip_policy_updated.v0"} <= set(CATALOG)


def test_create_get_list_update_delete(admin, esb):
    created = admin.post(esb, json={"type": "ip_policy_created.v0"})
    assert created.status_code == 201, created.text
    source = created.json()
    assert source == {
        "type": "ip_policy_created.v0",
        "fields": [],
        "uri": f"{BASE}{esb}/ip_policy_created.v0",
    }
    url = f"{esb}/ip_policy_created.v0"
    assert admin.get(url).json() == source
    assert admin.get(source["uri"].removeprefix(BASE)).json() == source
    assert admin.get(esb).json() == {"sources": [source], "uri": f"{BASE}{esb}"}
    updated = admin.patch(url, json={})
    assert (updated.status_code, updated.json()) == (200, source)
    assert admin.delete(url).status_code == 204
    assert_error(admin.get(url), 404, "ERR_NOT_FOUND")
    assert_error(admin.delete(url), 404, "ERR_NOT_FOUND")
    assert admin.get(esb).json() == {"sources": [], "uri": f"{BASE}{esb}"}


def test_every_catalog_type_is_accepted_and_the_list_is_ordered_by_type(admin, esb):
    for event_type in reversed(CATALOG):
        assert admin.post(esb, json={"type": event_type}).status_code == 201
    listed = admin.get(esb).json()
    assert set(listed) == {"sources", "uri"}  # no next_page_uri: never paged
    assert [s["type"] for s in listed["sources"]] == sorted(CATALOG)
    assert len(listed["sources"]) == len(CATALOG)


def test_duplicate_is_409(admin, esb):
    assert admin.post(esb, json={"type": "api_key_created.v0"}).status_code == 201
    body = assert_error(
        admin.post(esb, json={"type": "api_key_created.v0"}), 409, "ERR_EVENT_SOURCE_EXISTS"
    )
    assert body["details"]["field"] == "type"
    assert len(admin.get(esb).json()["sources"]) == 1


def test_the_same_type_on_two_subscriptions(admin, factory, esb):
    second = factory.row(EventSubscription, admin.creds.account_id)
    other_esb = f"/event_subscriptions/{second.id}/sources"
    for path in (esb, other_esb):
        assert admin.post(path, json={"type": "tls_certificate_deleted.v0"}).status_code == 201
    assert admin.delete(f"{esb}/tls_certificate_deleted.v0").status_code == 204
    assert [s["type"] for s in admin.get(other_esb).json()["sources"]] == [
        "tls_certificate_deleted.v0"
    ]


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({"type": "ip_policy_exploded.v0"}, "ERR_INVALID_FIELD"),
        ({"type": "ip_policy_created.v1"}, "ERR_INVALID_FIELD"),
        ({"type": ""}, "ERR_INVALID_FIELD"),
        ({"type": 7}, "ERR_WRONG_TYPE"),
        ({"type": None}, "ERR_WRONG_TYPE"),
        ({}, "ERR_MISSING_FIELD"),
        ({"type": "api_key_created.v0", "filter": "x"}, "ERR_UNKNOWN_FIELD"),
    ],
)
def test_invalid_create_bodies(admin, esb, body, code):
    assert_error(admin.post(esb, json=body), 400, code)
    assert admin.get(esb).json()["sources"] == []


def test_create_needs_a_body(admin, esb):
    assert_error(admin.post(esb), 400, "ERR_INVALID_BODY")


def test_update_takes_no_body_and_no_content_type(admin, esb):
    admin.post(esb, json={"type": "reserved_domain_updated.v0"})
    url = f"{esb}/reserved_domain_updated.v0"
    bare = admin.patch(url)
    assert "content-type" not in {k.lower() for k in bare.request.headers}
    assert (bare.status_code, bare.json()["type"]) == (200, "reserved_domain_updated.v0")
    typed = admin.patch(url, content=b"{}", headers={"Content-Type": "application/json"})
    assert typed.status_code == 200
    # A type other than the path's cannot change it (tests/api/test_tolerated_shapes.py).
    body = assert_error(
        admin.patch(url, json={"type": "api_key_created.v0"}), 400, "ERR_INVALID_FIELD"
    )
    assert body["details"]["field"] == "type"
    assert [s["type"] for s in admin.get(esb).json()["sources"]] == ["reserved_domain_updated.v0"]


def test_get_update_delete_of_a_missing_type_are_404(admin, esb):
    url = f"{esb}/ip_policy_rule_deleted.v0"
    assert_error(admin.get(url), 404, "ERR_NOT_FOUND")
    assert_error(admin.patch(url, json={}), 404, "ERR_NOT_FOUND")
    assert_error(admin.delete(url), 404, "ERR_NOT_FOUND")


@pytest.mark.parametrize("method", ["GET", "PATCH", "DELETE"])
def test_unknown_type_in_the_path_is_400(admin, esb, method):
    response = admin.request(method, f"{esb}/ip_policy_exploded.v0")
    assert assert_error(response, 400, "ERR_INVALID_PARAMETER")["details"]["param"] == "type"


@pytest.mark.parametrize(
    "subscription_id",
    ["esb_short", "esb_0ERZHb3hGoaYLY3tKA0JZBzonDJx", "sub_0ERZHb3hGoaYLY3tKA0JZBzonDJ"],
)
def test_malformed_subscription_id_is_400(admin, subscription_id):
    path = f"/event_subscriptions/{subscription_id}/sources"
    for response in (
        admin.post(path, json={"type": "api_key_created.v0"}),
        admin.get(path),
        admin.get(f"{path}/api_key_created.v0"),
        admin.patch(f"{path}/api_key_created.v0", json={}),
        admin.delete(f"{path}/api_key_created.v0"),
    ):
        body = assert_error(response, 400, "ERR_INVALID_PARAMETER")
        assert body["details"]["param"] == "subscription_id"


def test_unknown_subscription_is_404(admin):
    path = f"/event_subscriptions/{UNKNOWN_ESB}/sources"
    assert_error(admin.post(path, json={"type": "api_key_created.v0"}), 404, "ERR_NOT_FOUND")
    assert_error(admin.get(path), 404, "ERR_NOT_FOUND")
    assert_error(admin.get(f"{path}/api_key_created.v0"), 404, "ERR_NOT_FOUND")
    assert_error(admin.patch(f"{path}/api_key_created.v0"), 404, "ERR_NOT_FOUND")
    assert_error(admin.delete(f"{path}/api_key_created.v0"), 404, "ERR_NOT_FOUND")


def test_accounts_are_isolated(admin, other, esb):
    admin.post(esb, json={"type": "event_destination_created.v0"})
    url = f"{esb}/event_destination_created.v0"
    assert_error(other.get(esb), 404, "ERR_NOT_FOUND")
    assert_error(other.post(esb, json={"type": "api_key_created.v0"}), 404, "ERR_NOT_FOUND")
    assert_error(other.get(url), 404, "ERR_NOT_FOUND")
    assert_error(other.patch(url, json={}), 404, "ERR_NOT_FOUND")
    assert_error(other.delete(url), 404, "ERR_NOT_FOUND")
    assert [s["type"] for s in admin.get(esb).json()["sources"]] == ["event_destination_created.v0"]


def test_list_takes_no_paging_parameters(admin, esb):
    # Undeclared query parameters are refused, as on every operation; the list is complete.
    admin.post(esb, json={"type": "api_key_created.v0"})
    body = assert_error(admin.get(esb, params={"limit": 1}), 400, "ERR_INVALID_PARAMETER")
    assert body["details"]["param"] == "limit"
    listed = admin.get(esb).json()
    assert [s["type"] for s in listed["sources"]] == ["api_key_created.v0"]
