"""Issue 23: every resource the API creates whose kind is in the event type catalog fires its
created, updated and deleted events (so the next resource cannot forget), and the ones outside
the catalog fire none."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.api.test_events import destination, events, subscribe
from tests.creates import CREATES
from tunnelgw.models import RESOURCES

# The event kind of each create operation's resource, as its model declares it (EVENT_KIND;
# None: outside the catalog, as on the platform); an edge's is its kind's.
_MODELS = {str(model.__tablename__): model for model in RESOURCES}
KINDS: dict[str, str | None] = {
    **{operation: _MODELS[create.kind].EVENT_KIND for operation, create in CREATES.items()},
    "tls_edges.create": "tls_edge",
}
NO_EVENTS = {operation for operation, kind in KINDS.items() if kind is None}


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
    kind = str(KINDS[operation])
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
