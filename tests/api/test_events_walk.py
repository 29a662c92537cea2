"""Issue 23: every resource the API creates whose kind is in the event type catalog fires its
created, updated and deleted events (so the next resource cannot forget), and the ones outside
the catalog fire none."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.api.test_events import destination, events, subscribe
from tests.creates import CREATES

# The event kind of each create operation's resource, where it is not its quota kind.
KINDS = {"tls_edges.create": "tls_edge", "vault_secrets.create": "secret"}
# Resources the catalog has no events for (as on the platform).
NO_EVENTS = {
    "service_users.create",
    "bot_users.create",
    "kubernetes_operators.create",
    "abuse_reports.create",
    # The platform documents no events for AI gateway API keys or access tokens.
    "ai_gateway_api_keys.create",
    "access_tokens.create",
}


def _types(kind: str) -> list[str]:
    return [f"{kind}_{action}.v0" for action in ("created", "updated", "deleted")]


def _sent(client: Any, type_: str, id_: str) -> list[dict[str, Any]]:
    """The events of `type_` about the resource `id_` (a subscription also sends its own
    creation)."""
    return [
        item["event"] for item in events(client, type=type_) if item["event"]["object"]["id"] == id_
    ]


@pytest.mark.parametrize("operation", sorted(set(CREATES) - NO_EVENTS))
def test_every_catalog_kind_fires_its_events(admin, tmp_path: Path, operation: str) -> None:
    create = CREATES[operation]
    kind = KINDS.get(operation, create.kind)
    created_type, updated_type, deleted_type = _types(kind)
    subscribe(admin, _types(kind), [destination(admin)])
    made = create.post(admin, tmp_path)
    assert made.status_code == 201, made.text
    shape = made.json()
    [event] = _sent(admin, created_type, shape["id"])
    expected = {**shape, "token": None} if "token" in shape else shape
    assert event["object"] == expected
    item = f"{create.path}/{shape['id']}"
    updated = admin.patch(item, json={"description": "walked"})
    assert updated.status_code == 200, updated.text
    [event] = _sent(admin, updated_type, shape["id"])
    assert event["object"] == updated.json()
    deleted = admin.delete(item)
    assert deleted.status_code == 204, deleted.text
    assert len(_sent(admin, deleted_type, shape["id"])) == 1


@pytest.mark.parametrize("operation", sorted(NO_EVENTS))
def test_kinds_outside_the_catalog_fire_nothing(admin, tmp_path: Path, operation: str) -> None:
    every = [f"{kind}_created.v0" for kind in ("api_key", "endpoint", "credential")]
    subscribe(admin, every, [destination(admin)])
    assert CREATES[operation].post(admin, tmp_path).status_code == 201
    assert events(admin) == []
