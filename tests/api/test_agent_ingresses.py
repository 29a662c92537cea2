"""Agent ingresses: /agent_ingresses (spec 4.7). Domains are unique over all accounts and the
test database is shared by the session, so every test makes its own domains."""

from __future__ import annotations

import uuid

import pytest

from tests.factories import assert_error
from tunnelgw.core.spec import load as load_spec
from tunnelgw.handlers import agent_ingresses
from tunnelgw.models import AgentIngress
from tunnelgw.rules import hostnames

PATH = "/agent_ingresses"
REGIONS = ["au", "eu", "ap", "us", "jp", "in", "sa"]
SPEC = load_spec()


def _domain(parent: str = "example.com") -> str:
    return f"i{uuid.uuid4().hex[:12]}.{parent}"


def test_create_get_list_update_delete(admin, settings):
    domain = _domain()
    created = admin.post(
        PATH, json={"domain": domain, "description": "office", "metadata": '{"site": 1}'}
    )
    assert created.status_code == 201, created.text
    ingress = created.json()
    assert ingress["id"].startswith("agin_")
    assert ingress["uri"] == f"http://testserver{PATH}/{ingress['id']}"
    assert ingress["domain"] == domain
    assert ingress["ns_targets"] == settings.ns_target_list()
    assert ingress["ns_targets"] == [f"ns{n}.tunnelgw.test" for n in (1, 2, 3, 4)]
    assert ingress["region_domains"] == [f"{region}.{domain}" for region in REGIONS]
    assert (ingress["description"], ingress["metadata"]) == ("office", '{"site": 1}')

    url = f"{PATH}/{ingress['id']}"
    assert admin.get(url).json() == ingress
    assert admin.get(PATH).json()["ingresses"] == [ingress]
    updated = admin.patch(url, json={"description": "hq", "metadata": None}).json()
    assert updated == {**ingress, "description": "hq"}
    assert admin.get(url).json() == updated
    assert admin.delete(url).status_code == 204
    assert_error(admin.get(url), 404, "ERR_NOT_FOUND")
    assert_error(admin.delete(url), 404, "ERR_NOT_FOUND")
    assert admin.get(PATH).json()["ingresses"] == []


def test_optional_fields_default_to_empty_strings(admin):
    ingress = admin.post(PATH, json={"domain": _domain(), "description": None}).json()
    assert (ingress["description"], ingress["metadata"]) == ("", "")


def test_domain_is_stored_lower_case(admin):
    domain = _domain("Example.COM").upper()
    ingress = admin.post(PATH, json={"domain": domain}).json()
    assert ingress["domain"] == domain.lower()
    assert ingress["region_domains"][0] == f"au.{domain.lower()}"


@pytest.mark.inprocess
def test_ns_targets_come_from_the_settings(admin, monkeypatch):
    from tunnelgw.core import settings

    monkeypatch.setattr(settings.current(), "ns_targets", " a.dns.example , b.dns.example,")
    ingress = admin.post(PATH, json={"domain": _domain()}).json()
    assert ingress["ns_targets"] == ["a.dns.example", "b.dns.example"]


def test_longest_domain_keeps_region_domains_within_253(admin):
    label = uuid.uuid4().hex[:8]
    domain = ".".join([label, *["a" * 59] * 4])[:245] + ".com"
    assert len(domain) == hostnames.INGRESS_MAX_LENGTH == 249
    ingress = admin.post(PATH, json={"domain": domain})
    assert ingress.status_code == 201, ingress.text
    assert max(len(name) for name in ingress.json()["region_domains"]) <= hostnames.MAX_LENGTH
    too_long = "b" + domain
    error = assert_error(admin.post(PATH, json={"domain": too_long}), 400, "ERR_FIELD_TOO_LONG")
    assert error["details"]["field"] == "domain"


def test_spec_limit_matches_hostnames():
    domain = SPEC["components"]["schemas"]["AgentIngressCreate"]["properties"]["domain"]
    assert domain["maxLength"] == hostnames.INGRESS_MAX_LENGTH
    longest_region = max(len(region) for region in hostnames.REGIONS)
    assert hostnames.INGRESS_MAX_LENGTH + longest_region + 1 <= hostnames.MAX_LENGTH
    pattern = SPEC["components"]["schemas"]["IngressHostname"]["pattern"]
    assert pattern == f"^{hostnames.INGRESS.pattern}$"
    assert list(hostnames.REGIONS) == REGIONS


@pytest.mark.parametrize(
    "domain",
    [
        "tunnelgw.test",
        "TunnelGW.Test",
        "app.tunnelgw.test",
        "a.b.tunnelgw.test",
        "cname.tunnelgw.test",
        "x.acme.tunnelgw.test",
    ],
)
def test_the_services_own_domains_are_refused(admin, domain):
    error = assert_error(admin.post(PATH, json={"domain": domain}), 409, "ERR_DOMAIN_IN_USE")
    assert error["details"]["field"] == "domain"
    assert admin.get(PATH).json()["ingresses"] == []


def test_a_name_that_only_ends_like_the_shared_domain_is_accepted(admin):
    domain = f"x{uuid.uuid4().hex[:8]}tunnelgw.test"
    assert admin.post(PATH, json={"domain": domain}).status_code == 201


@pytest.mark.parametrize(
    ("body", "code", "field"),
    [
        ({}, "ERR_MISSING_FIELD", "domain"),
        ({"description": "x"}, "ERR_MISSING_FIELD", "domain"),
        ({"domain": None}, "ERR_WRONG_TYPE", "domain"),
        ({"domain": 42}, "ERR_WRONG_TYPE", "domain"),
        ({"domain": ""}, "ERR_INVALID_FIELD", "domain"),
        ({"domain": "localhost"}, "ERR_INVALID_FIELD", "domain"),
        ({"domain": "*.example.com"}, "ERR_INVALID_FIELD", "domain"),
        ({"domain": "-a.example.com"}, "ERR_INVALID_FIELD", "domain"),
        ({"domain": "a..example.com"}, "ERR_INVALID_FIELD", "domain"),
        ({"domain": "example.com."}, "ERR_INVALID_FIELD", "domain"),
        ({"domain": "example.123"}, "ERR_INVALID_FIELD", "domain"),
        ({"domain": "under_score.example.com"}, "ERR_INVALID_FIELD", "domain"),
        ({"domain": "a" * 64 + ".example.com"}, "ERR_INVALID_FIELD", "domain"),
        ({"domain": "ex ample.com"}, "ERR_INVALID_FIELD", "domain"),
        (
            {"domain": "a.example.com", "description": "é" * 128},
            "ERR_FIELD_TOO_LONG",
            "description",
        ),
        ({"domain": "a.example.com", "metadata": "x" * 4097}, "ERR_FIELD_TOO_LONG", "metadata"),
        ({"domain": "a.example.com", "region_domains": []}, "ERR_UNKNOWN_FIELD", "region_domains"),
        ({"domain": "a.example.com", "ns_targets": ["x"]}, "ERR_UNKNOWN_FIELD", "ns_targets"),
    ],
)
def test_invalid_requests_write_nothing(admin, body, code, field):
    error = assert_error(admin.post(PATH, json=body), 400, code)
    assert error["details"]["field"] == field
    assert admin.get(PATH).json()["ingresses"] == []


def test_a_domain_is_taken_in_every_account(admin, other):
    domain = _domain()
    first = admin.post(PATH, json={"domain": domain}).json()
    for client, name in ((admin, domain), (other, domain), (other, domain.upper())):
        error = assert_error(client.post(PATH, json={"domain": name}), 409, "ERR_DOMAIN_IN_USE")
        assert error["details"]["field"] == "domain"
    assert other.get(PATH).json()["ingresses"] == []
    # Subdomains and parents are different domains.
    assert admin.post(PATH, json={"domain": f"sub.{domain}"}).status_code == 201
    assert other.post(PATH, json={"domain": domain.split(".", 1)[1] + ".net"}).status_code == 201
    # Deleting frees the domain, for any account.
    assert admin.delete(f"{PATH}/{first['id']}").status_code == 204
    assert other.post(PATH, json={"domain": domain}).status_code == 201


@pytest.mark.inprocess
def test_the_unique_index_settles_a_race(admin, monkeypatch):
    domain = _domain()
    admin.post(PATH, json={"domain": domain})

    async def not_taken(_session, _column, _value):  # type: ignore[no-untyped-def]
        return False

    # The check passed in a concurrent request; the insert then hits the unique index.
    monkeypatch.setattr(agent_ingresses.crud, "taken", not_taken)
    assert_error(admin.post(PATH, json={"domain": domain}), 409, "ERR_CONFLICT")
    assert len(admin.get(PATH).json()["ingresses"]) == 1


@pytest.mark.parametrize(
    ("body", "code", "field"),
    [
        ({"domain": "b.example.com"}, "ERR_UNKNOWN_FIELD", "domain"),
        ({"ns_targets": []}, "ERR_UNKNOWN_FIELD", "ns_targets"),
        ({"region_domains": None}, "ERR_UNKNOWN_FIELD", "region_domains"),
        ({"description": "x" * 256}, "ERR_FIELD_TOO_LONG", "description"),
        ({"metadata": 1}, "ERR_WRONG_TYPE", "metadata"),
    ],
)
def test_update_changes_only_description_and_metadata(admin, body, code, field):
    ingress = admin.post(PATH, json={"domain": _domain()}).json()
    url = f"{PATH}/{ingress['id']}"
    assert assert_error(admin.patch(url, json=body), 400, code)["details"]["field"] == field
    assert admin.get(url).json() == ingress
    assert admin.patch(url, json={"metadata": "m"}).json() == {**ingress, "metadata": "m"}
    assert admin.patch(url).json() == {**ingress, "metadata": "m"}


def test_accounts_are_isolated(admin, other):
    ingress = admin.post(PATH, json={"domain": _domain()}).json()
    url = f"{PATH}/{ingress['id']}"
    assert_error(other.get(url), 404, "ERR_NOT_FOUND")
    assert_error(other.patch(url, json={"description": "theirs"}), 404, "ERR_NOT_FOUND")
    assert_error(other.delete(url), 404, "ERR_NOT_FOUND")
    assert other.get(PATH).json()["ingresses"] == []
    assert admin.get(url).json() == ingress


def test_unknown_ids_are_not_found(admin):
    for id_ in ("agin_2pQcJ1aBc3dEfGh4IjK5lMn6OpQ", "garbage"):
        assert_error(admin.get(f"{PATH}/{id_}"), 404, "ERR_NOT_FOUND")


def test_list_pages(admin, factory):
    made = [admin.post(PATH, json={"domain": _domain()}).json()["id"] for _ in range(3)]
    first = admin.get(PATH, params={"limit": 2}).json()
    assert [i["id"] for i in first["ingresses"]] == made[::-1][:2]
    assert first["uri"] == f"http://testserver{PATH}"
    assert first["next_page_uri"] == f"http://testserver{PATH}?limit=2&before_id={made[1]}"
    second = admin.get(first["next_page_uri"].removeprefix("http://testserver")).json()
    assert [i["id"] for i in second["ingresses"]] == [made[0]]
    assert second["next_page_uri"] is None
    alias = admin.get(PATH, params={"beforeId": made[2], "limit": 1}).json()
    assert [i["id"] for i in alias["ingresses"]] == [made[1]]
    assert admin.get(PATH, params={"before_id": made[0]}).json() == {
        "ingresses": [],
        "uri": f"http://testserver{PATH}",
        "next_page_uri": None,
    }
    for params in ({"before_id": made[0].replace("agin_", "ak_")}, {"limit": 0}):
        assert_error(admin.get(PATH, params=params), 400, "ERR_INVALID_PARAMETER")
    # Rows made directly (as fixtures would) page the same way.
    row = factory.row(AgentIngress, admin.creds.account_id, domain=_domain())
    assert admin.get(PATH, params={"limit": 1}).json()["ingresses"][0]["id"] == row.id
