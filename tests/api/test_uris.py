"""Every `uri` answers: on the example world, walk every list operation of the spec and follow
every `uri` (and `next_page_uri`) in every response, Refs included, recursively (bounded):
each answers 200 with the object it names. Nothing is skipped: the one `uri` that is no
address is a user's Ref, `""` as the platform returns it, and that is checked too (the id is
a user of the account, and only users' Refs have it)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests.api.test_fixtures import _reset, path_values
from tunnelgw import seeding
from tunnelgw.core.spec import load as load_spec

EXAMPLE = Path(__file__).resolve().parents[2] / "fixtures" / "example.yaml"
BASE = "http://testserver"
MAX_DEPTH = 4
MAX_REQUESTS = 1000


def _named(value: Any) -> Iterator[dict[str, Any]]:
    """Every object in `value` that has a `uri`, depth first."""
    if isinstance(value, dict):
        if isinstance(value.get("uri"), str):
            yield value
        for child in value.values():
            yield from _named(child)
    elif isinstance(value, list):
        for child in value:
            yield from _named(child)


def _next_pages(value: Any) -> Iterator[str]:
    if isinstance(value, dict) and isinstance(value.get("next_page_uri"), str):
        yield value["next_page_uri"]


def _list_paths(labels: dict[str, str]) -> list[str]:
    paths = []
    for path, operations in load_spec()["paths"].items():
        get = operations.get("get")
        # lists (and the TLS edge backend module); not the unauthenticated service routes
        if get is None or "security" in get or path.endswith("}"):
            continue
        if path.startswith("/_admin/events"):  # what was sent, with the sender's addresses
            continue
        paths.append(path.format(**path_values(path, labels)))
    return paths


def _check_named(named: dict[str, Any], body: Any, url: str) -> None:
    """The object at `url` is the one `named` names: the same id (or event type), and the
    same object where `named` is the whole object rather than a Ref."""
    assert isinstance(body, dict), url
    if "id" in named:
        assert body.get("id") == named["id"], (url, body)
    elif "type" in named:  # an event source
        assert body.get("type") == named["type"], (url, body)
    if set(named) == set(body) and "next_page_uri" not in named:
        assert body == named, url


def test_every_uri_answers_with_the_object_it_names(settings, admin):
    account = admin.creds.account_id
    summary = seeding.load(EXAMPLE, settings, account)
    try:
        labels = summary["labels"]
        # Endpoint configurations are named only by a reserved domain's update.
        patched = admin.patch(
            f"/reserved_domains/{labels['demo']}",
            json={"https_endpoint_configuration_id": labels["https-config"]},
        )
        assert patched.status_code == 200, patched.text
        queue: list[tuple[str, dict[str, Any] | None, int]] = [
            (path, None, 0) for path in _list_paths(labels)
        ]
        seen: set[str] = set()
        users: set[str] = set()
        kinds: set[str] = set()
        requests = 0
        while queue:
            url, named, depth = queue.pop(0)
            path = url.removeprefix(BASE)
            assert path.startswith("/"), f"not an address of this API: {url}"
            if path in seen:
                continue
            seen.add(path)
            requests += 1
            assert requests <= MAX_REQUESTS
            response = admin.get(path)
            assert response.status_code == 200, (url, response.text)
            body = response.json()
            if named is not None:
                _check_named(named, body, url)
            kinds.add(path.split("/")[1])
            if depth >= MAX_DEPTH:
                continue
            for found in _named(body):
                if found["uri"] == "":
                    # A user's Ref: no address in this API nor the platform's (PrincipalRef).
                    assert set(found) == {"id", "uri"}, (url, found)
                    users.add(found["id"])
                    continue
                if found["uri"].removeprefix(BASE) != path:
                    queue.append((found["uri"], found, depth + 1))
            queue.extend((page, None, depth + 1) for page in _next_pages(body))
        # The users named were the account's own (its admin registered the operator).
        assert users == {admin.creds.principal_id}, users
        # Every kind of resource the example holds was reached through some uri.
        assert kinds >= {
            "api_keys",
            "backends",
            "certificate_authorities",
            "ssh_certificate_authorities",
            "ssh_user_certificates",
            "reserved_domains",
            "agent_ingresses",
            "edges",
            "endpoints",
            "app",
            "event_subscriptions",
            "tls_certificates",
            "reserved_addrs",
            "tunnels",
            "endpoint_configurations",
            "ip_policies",
            "ip_policy_rules",
            "ip_restrictions",
            "bot_users",
            "service_users",
            "credentials",
            "ssh_credentials",
            "kubernetes_operators",
            "vaults",
            "vault_secrets",
            "ssh_host_certificates",
            "ai_gateway_api_keys",
        }
        # Refs of every shape the responses carry were followed (a sample of them).
        for ref in (
            f"/tunnels/{labels['web-tunnel']}",
            f"/endpoints/{labels['ep-db']}",
            f"/reserved_addrs/{labels['db-addr']}",
            f"/tls_certificates/{labels['app-cert']}",
            f"/backends/tunnel_group/{labels['mqtt-group']}",
            f"/edges/https/{labels['web-edge']}/routes/{labels['web-root']}",
            f"/endpoint_configurations/{labels['https-config']}",
            f"/event_subscriptions/{labels['audit']}/sources/api_key_created.v0",
            f"/bot_users/{labels['deployer']}",
            f"/kubernetes_operators/{labels['prod-operator']}",
            f"/endpoints/{labels['ep-orders']}",
            f"/service_users/{labels['legacy-bot']}",
            f"/credentials/{labels['edge-agent']}",
            f"/vaults/{labels['prod-vault']}",
            f"/vault_secrets/{labels['billing-token']}",
            f"/ssh_credentials/{labels['device-132']}",
            f"/ssh_host_certificates/{labels['bastion-cert']}",
            f"/ai_gateway_api_keys/{labels['shop-assistant-key']}",
            f"/endpoints/{labels['shop-front']}",
        ):
            assert ref in seen, ref
        # Abuse reports have no list to reach them from: their own uri answers.
        report = admin.get(f"/abuse_reports/{labels['phishing-report']}").json()
        assert admin.get(report["uri"].removeprefix(BASE)).json() == report
    finally:
        _reset(settings, account)
