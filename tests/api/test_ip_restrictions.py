"""IP restrictions (/ip_restrictions): CRUD with their policies, and `api` restrictions applied
to this API: an enforced one refuses other addresses with 403, an unenforced one only records
what it would refuse, the admin API always answers."""

from __future__ import annotations

import pytest

from tests.factories import assert_error

POLICIES = "/ip_policies"
RULES = "/ip_policy_rules"
PATH = "/ip_restrictions"


def _policy_with(session, *rules: tuple[str, str]) -> str:  # type: ignore[no-untyped-def]
    policy = session.post(POLICIES, json={}).json()["id"]
    for cidr, action in rules:
        body = {"ip_policy_id": policy, "cidr": cidr, "action": action}
        assert session.post(RULES, json=body).status_code == 201
    return policy


def test_create_get_list_update_delete(admin):
    first, second = _policy_with(admin), _policy_with(admin)
    created = admin.post(
        PATH,
        json={"type": "dashboard", "ip_policy_ids": [second, first], "description": "office"},
    )
    assert created.status_code == 201, created.text
    restriction = created.json()
    assert restriction["id"].startswith("ipr_")
    assert (restriction["type"], restriction["enforced"]) == ("dashboard", False)
    assert [p["id"] for p in restriction["ip_policies"]] == [second, first]
    assert restriction["ip_policies"][0]["uri"] == f"http://testserver{POLICIES}/{second}"
    url = f"{PATH}/{restriction['id']}"
    assert admin.get(url).json() == restriction
    assert admin.get(PATH).json()["ip_restrictions"] == [restriction]
    unchanged = admin.patch(url, json={"ip_policy_ids": [], "description": "office 2"}).json()
    assert unchanged == {**restriction, "description": "office 2"}
    changed = admin.patch(url, json={"ip_policy_ids": [first], "enforced": True}).json()
    assert [p["id"] for p in changed["ip_policies"]] == [first]
    assert changed["enforced"] is True
    assert admin.get(url).json() == changed
    assert admin.delete(url).status_code == 204
    assert_error(admin.get(url), 404, "ERR_NOT_FOUND")


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ({"type": "api", "ip_policy_ids": []}, 400, "ERR_INVALID_FIELD"),
        ({"type": "api"}, 400, "ERR_MISSING_FIELD"),
        ({"type": "ssh", "ip_policy_ids": ["ipp_" + "0" * 27]}, 400, "ERR_INVALID_FIELD"),
        ({"type": "api", "ip_policy_ids": ["ipp_" + "0" * 27]}, 404, "ERR_REFERENCE_NOT_FOUND"),
        ({"type": "api", "ip_policy_ids": ["ak_" + "0" * 27]}, 400, "ERR_INVALID_FIELD"),
    ],
)
def test_invalid_restrictions_are_refused(admin, body, status, code):
    assert_error(admin.post(PATH, json=body), status, code)
    assert admin.get(PATH).json()["ip_restrictions"] == []


def test_the_type_cannot_change_and_policies_must_be_the_accounts(admin, other):
    mine, theirs = _policy_with(admin), _policy_with(other)
    restriction = admin.post(PATH, json={"type": "agent", "ip_policy_ids": [mine]}).json()
    url = f"{PATH}/{restriction['id']}"
    assert_error(admin.patch(url, json={"type": "api"}), 400, "ERR_UNKNOWN_FIELD")
    assert_error(admin.patch(url, json={"ip_policy_ids": [theirs]}), 404, "ERR_REFERENCE_NOT_FOUND")
    assert admin.get(url).json() == restriction
    assert_error(other.get(url), 404, "ERR_NOT_FOUND")


def test_an_enforced_api_restriction_refuses_other_addresses(admin, factory):
    # The test client's address is 127.0.0.1 (in-process and live servers alike).
    elsewhere = _policy_with(admin, ("10.0.0.0/8", "allow"))
    restriction = admin.post(
        PATH, json={"type": "api", "enforced": True, "ip_policy_ids": [elsewhere]}
    ).json()
    refused = admin.get("/api_keys")
    assert_error(refused, 403, "ERR_IP_RESTRICTED")
    assert refused.json()["details"]["address"] == "127.0.0.1"
    assert refused.json()["details"]["restriction"] == restriction["id"]
    # Every key of the account, every operation; another account is not concerned.
    other = factory.account()
    assert other.get("/api_keys").status_code == 200
    # The admin API still answers, and its reset lifts the restriction.
    assert admin.get("/_admin/clock").status_code == 200
    assert admin.post("/_admin/reset").status_code == 200
    assert admin.get("/api_keys").status_code == 200


def test_the_most_specific_rule_decides_and_deny_wins_a_tie(admin):
    here = _policy_with(
        admin,
        ("127.0.0.0/8", "allow"),
        ("127.0.0.0/16", "deny"),
        ("127.0.0.1/32", "allow"),
    )
    restriction = admin.post(
        PATH, json={"type": "api", "enforced": True, "ip_policy_ids": [here]}
    ).json()
    assert admin.get(PATH).status_code == 200  # the /32 allow is the most specific
    tie = _policy_with(admin, ("127.0.0.1/32", "deny"))
    assert (
        admin.patch(f"{PATH}/{restriction['id']}", json={"ip_policy_ids": [here, tie]}).status_code
        == 200
    )
    assert_error(admin.get(PATH), 403, "ERR_IP_RESTRICTED")  # deny wins at /32


def test_an_unenforced_restriction_only_records(admin, caplog):
    elsewhere = _policy_with(admin, ("10.0.0.0/8", "allow"))
    restriction = admin.post(PATH, json={"type": "api", "ip_policy_ids": [elsewhere]}).json()
    assert restriction["enforced"] is False
    with caplog.at_level("WARNING", logger="tunnelgw.restrictions"):
        assert admin.get("/api_keys").status_code == 200
    metrics = admin.get("/metrics").text
    assert 'tunnelgw_ip_restriction_refusals_total{enforced="false"}' in metrics
    if caplog.records:  # in-process only: a live server logs to its own stream
        assert restriction["id"] in caplog.records[0].getMessage()


def test_an_allowing_restriction_and_other_types_let_requests_through(admin):
    here = _policy_with(admin, ("127.0.0.1", "allow"))
    elsewhere = _policy_with(admin, ("10.0.0.0/8", "allow"))
    admin.post(PATH, json={"type": "api", "enforced": True, "ip_policy_ids": [here]})
    for kind in ("dashboard", "agent", "endpoints"):
        body = {"type": kind, "enforced": True, "ip_policy_ids": [elsewhere]}
        assert admin.post(PATH, json=body).status_code == 201
    assert admin.get("/api_keys").status_code == 200


def test_deleting_or_relaxing_the_restriction_lifts_it(admin):
    elsewhere = _policy_with(admin, ("10.0.0.0/8", "allow"))
    restriction = admin.post(
        PATH, json={"type": "api", "enforced": False, "ip_policy_ids": [elsewhere]}
    ).json()
    url = f"{PATH}/{restriction['id']}"
    assert admin.patch(url, json={"enforced": True}).status_code == 200
    assert_error(admin.get(url), 403, "ERR_IP_RESTRICTED")
    # Locked out of the API: the admin API's reset frees the account.
    assert admin.post("/_admin/reset").status_code == 200
    assert admin.get(PATH).json()["ip_restrictions"] == []


def test_behind_a_trusted_proxy_the_forwarded_address_counts(spec_validator):
    """A live server with `trusted_proxies`: the client address is taken from
    `X-Forwarded-For` (the right-most untrusted hop), never from a header of an untrusted
    peer (here every peer is 127.0.0.1, which the setting trusts)."""
    from tunnelgw.testing import TunnelgwServer

    with TunnelgwServer(trusted_proxies="127.0.0.1") as server, server.client() as http:
        policy = http.post(POLICIES, json={}).json()["id"]
        rule = {"ip_policy_id": policy, "cidr": "198.51.100.0/24", "action": "allow"}
        assert http.post(RULES, json=rule).status_code == 201
        body = {"type": "api", "enforced": True, "ip_policy_ids": [policy]}
        assert http.post(PATH, json=body).status_code == 201
        refused = http.get(PATH)
        assert refused.status_code == 403
        assert refused.json()["details"]["address"] == "127.0.0.1"
        allowed = http.get(PATH, headers={"X-Forwarded-For": "6.6.6.6, 198.51.100.7"})
        assert allowed.status_code == 200, allowed.text
        spoofed = http.get(PATH, headers={"X-Forwarded-For": "198.51.100.7, 6.6.6.6"})
        assert spoofed.json()["details"]["address"] == "6.6.6.6"
        for response in (refused, allowed, spoofed):
            spec_validator.check(response)


def test_without_trusted_proxies_a_forwarded_header_changes_nothing(spec_validator):
    """A live server with the default settings (no trusted proxies): the client address is
    the peer's, whatever `X-Forwarded-For` says, even from 127.0.0.1 (uvicorn's own proxy
    handling, which trusts 127.0.0.1 by default, is off: `trusted_proxies` alone decides)."""
    from tunnelgw.testing import TunnelgwServer

    with TunnelgwServer() as server, server.client() as http:
        policy = http.post(POLICIES, json={}).json()["id"]
        rule = {"ip_policy_id": policy, "cidr": "198.51.100.0/24", "action": "allow"}
        assert http.post(RULES, json=rule).status_code == 201
        body = {"type": "api", "enforced": True, "ip_policy_ids": [policy]}
        assert http.post(PATH, json=body).status_code == 201
        headers = {"X-Forwarded-For": "198.51.100.7", "X-Forwarded-Proto": "https"}
        spoofed = http.get(PATH, headers=headers)
        assert spoofed.status_code == 403
        assert spoofed.json()["error_code"] == "ERR_IP_RESTRICTED"
        assert spoofed.json()["details"]["address"] == "127.0.0.1"
        spec_validator.check(spoofed)
