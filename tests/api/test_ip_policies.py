"""IP policies (/ip_policies) and their rules (/ip_policy_rules): CRUD, canonical CIDRs,
references to policies, and deleting a policy (its rules go with it; one a restriction uses
cannot be deleted)."""

from __future__ import annotations

import pytest

from tests.factories import assert_error

POLICIES = "/ip_policies"
RULES = "/ip_policy_rules"
RESTRICTIONS = "/ip_restrictions"


def _policy(session, **body):  # type: ignore[no-untyped-def]
    created = session.post(POLICIES, json=body)
    assert created.status_code == 201, created.text
    return created.json()


def test_policy_create_get_list_update_delete(admin):
    policy = _policy(admin, description="office", metadata='{"team": "net"}')
    assert policy["id"].startswith("ipp_")
    assert policy["uri"] == f"http://testserver{POLICIES}/{policy['id']}"
    assert (policy["description"], policy["metadata"]) == ("office", '{"team": "net"}')
    url = f"{POLICIES}/{policy['id']}"
    assert admin.get(url).json() == policy
    assert admin.get(POLICIES).json()["ip_policies"] == [policy]
    assert _policy(admin)["description"] == ""
    updated = admin.patch(url, json={"description": "office + vpn", "metadata": None}).json()
    assert updated == {**policy, "description": "office + vpn"}
    assert admin.delete(url).status_code == 204
    assert_error(admin.get(url), 404, "ERR_NOT_FOUND")


def test_rule_create_get_list_update_delete(admin):
    policy = _policy(admin)
    created = admin.post(
        RULES,
        json={
            "ip_policy_id": policy["id"],
            "cidr": "10.1.2.3/8",
            "action": "allow",
            "description": "corp",
        },
    )
    assert created.status_code == 201, created.text
    rule = created.json()
    assert rule["id"].startswith("ipx_")
    assert rule["cidr"] == "10.0.0.0/8"  # canonical: host bits cleared
    assert rule["ip_policy"] == {"id": policy["id"], "uri": policy["uri"]}
    assert (rule["action"], rule["description"], rule["metadata"]) == ("allow", "corp", "")
    url = f"{RULES}/{rule['id']}"
    assert admin.get(url).json() == rule
    assert admin.get(RULES).json()["ip_policy_rules"] == [rule]
    changed = admin.patch(url, json={"cidr": "2001:DB8:0:0::1", "metadata": "m"}).json()
    assert changed == {**rule, "cidr": "2001:db8::1/128", "metadata": "m"}
    assert admin.delete(url).status_code == 204
    assert_error(admin.get(url), 404, "ERR_NOT_FOUND")


@pytest.mark.parametrize(
    ("cidr", "canonical"),
    [
        ("198.51.100.7", "198.51.100.7/32"),
        ("198.51.100.0/24", "198.51.100.0/24"),
        ("0.0.0.0/0", "0.0.0.0/0"),
        ("2001:db8::/32", "2001:db8::/32"),
        ("2001:0db8:0000::/48", "2001:db8::/48"),
        ("::/0", "::/0"),
    ],
)
def test_a_rule_stores_its_network_in_canonical_form(admin, cidr, canonical):
    policy = _policy(admin)
    body = {"ip_policy_id": policy["id"], "cidr": cidr, "action": "deny"}
    assert admin.post(RULES, json=body).json()["cidr"] == canonical


@pytest.mark.parametrize(
    "cidr",
    [
        "",
        "10.0.0.0/33",
        "300.1.1.1",
        "10.0.0.0/8 ",
        "example.com",
        "fe80::1%eth0",
        "10.0.0.0/-1",
        "::/129",
        "1.2.3",
    ],
)
def test_an_invalid_cidr_is_400(admin, cidr):
    policy = _policy(admin)
    response = admin.post(
        RULES, json={"ip_policy_id": policy["id"], "cidr": cidr, "action": "allow"}
    )
    code = "ERR_INVALID_FIELD" if cidr == "" else "ERR_INVALID_CIDR"
    assert_error(response, 400, code)
    rule = admin.post(
        RULES, json={"ip_policy_id": policy["id"], "cidr": "10.0.0.0/8", "action": "allow"}
    ).json()
    assert_error(admin.patch(f"{RULES}/{rule['id']}", json={"cidr": cidr}), 400, code)


def test_a_rule_needs_a_policy_of_the_account_and_a_known_action(admin, other):
    mine, theirs = _policy(admin), _policy(other)
    body = {"cidr": "10.0.0.0/8", "action": "allow"}
    assert_error(
        admin.post(RULES, json={**body, "ip_policy_id": theirs["id"]}),
        404,
        "ERR_REFERENCE_NOT_FOUND",
    )
    assert_error(
        admin.post(RULES, json={**body, "ip_policy_id": "ipp_" + "0" * 27}),
        404,
        "ERR_REFERENCE_NOT_FOUND",
    )
    assert_error(
        admin.post(RULES, json={**body, "ip_policy_id": mine["id"], "action": "maybe"}),
        400,
        "ERR_INVALID_FIELD",
    )
    assert_error(
        admin.post(RULES, json={"cidr": "10.0.0.0/8", "action": "allow"}), 400, "ERR_MISSING_FIELD"
    )


def test_a_rules_policy_and_action_cannot_change(admin):
    policy = _policy(admin)
    rule = admin.post(
        RULES, json={"ip_policy_id": policy["id"], "cidr": "10.0.0.0/8", "action": "allow"}
    ).json()
    for body in ({"action": "deny"}, {"ip_policy_id": policy["id"]}):
        assert_error(admin.patch(f"{RULES}/{rule['id']}", json=body), 400, "ERR_UNKNOWN_FIELD")


def test_deleting_a_policy_deletes_its_rules(admin):
    policy = _policy(admin)
    rule = admin.post(
        RULES, json={"ip_policy_id": policy["id"], "cidr": "10.0.0.0/8", "action": "allow"}
    ).json()
    assert admin.delete(f"{POLICIES}/{policy['id']}").status_code == 204
    assert_error(admin.get(f"{RULES}/{rule['id']}"), 404, "ERR_NOT_FOUND")
    assert admin.get(RULES).json()["ip_policy_rules"] == []


def test_a_policy_a_restriction_uses_cannot_be_deleted(admin):
    policy = _policy(admin)
    restriction = admin.post(
        RESTRICTIONS, json={"type": "dashboard", "ip_policy_ids": [policy["id"]]}
    ).json()
    refused = admin.delete(f"{POLICIES}/{policy['id']}")
    assert_error(refused, 409, "ERR_IP_POLICY_IN_USE")
    assert refused.json()["details"]["restrictions"] == restriction["id"]
    assert admin.get(f"{POLICIES}/{policy['id']}").status_code == 200
    assert admin.delete(f"{RESTRICTIONS}/{restriction['id']}").status_code == 204
    assert admin.delete(f"{POLICIES}/{policy['id']}").status_code == 204


def test_another_accounts_policies_and_rules_are_not_found(admin, other):
    policy = _policy(admin)
    rule = admin.post(
        RULES, json={"ip_policy_id": policy["id"], "cidr": "10.0.0.0/8", "action": "allow"}
    ).json()
    for url in (f"{POLICIES}/{policy['id']}", f"{RULES}/{rule['id']}"):
        assert_error(other.get(url), 404, "ERR_NOT_FOUND")
        assert_error(other.patch(url, json={"description": "x"}), 404, "ERR_NOT_FOUND")
        assert_error(other.delete(url), 404, "ERR_NOT_FOUND")
    assert other.get(POLICIES).json()["ip_policies"] == []
    assert other.get(RULES).json()["ip_policy_rules"] == []


def test_lists_page_and_filter(admin):
    made = [_policy(admin, description=f"p{n}")["id"] for n in range(3)]
    first = admin.get(POLICIES, params={"limit": 2}).json()
    assert [p["id"] for p in first["ip_policies"]] == made[:0:-1]
    rest = admin.get(POLICIES, params={"limit": 2, "beforeId": made[1]}).json()
    assert [p["id"] for p in rest["ip_policies"]] == [made[0]]
    found = admin.get(POLICIES, params={"filter": 'obj.description == "p1"'}).json()
    assert [p["id"] for p in found["ip_policies"]] == [made[1]]
    rule = admin.post(
        RULES, json={"ip_policy_id": made[0], "cidr": "10.0.0.0/8", "action": "deny"}
    ).json()
    denied = admin.get(RULES, params={"filter": 'obj.action == "deny"'}).json()
    assert [r["id"] for r in denied["ip_policy_rules"]] == [rule["id"]]
