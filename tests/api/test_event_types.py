"""Issue 10, item 4: the event type catalog has the traffic events and a resource event family
for every resource this server has; anything else is still 400."""

from __future__ import annotations

import pytest

from tests.factories import assert_error
from tunnelgw.core.spec import load as load_spec
from tunnelgw.models import RESOURCES, EventSubscription
from tunnelgw.models.edge import KIND_PREFIXES

SPEC = load_spec()
CATALOG = SPEC["components"]["schemas"]["EventType"]["enum"]
TRAFFIC = ["http_request_complete.v0", "tcp_connection_closed.v0"]
# The kinds whose changes fire events, as the models declare them (EVENT_KIND; edges by
# their kind, tunnelgw.services.events): the resources the API document describes, and those
# it only references, which this server serves too.
SERVED = sorted(
    {model.EVENT_KIND for model in RESOURCES if model.EVENT_KIND is not None}
    | {f"{kind}_edge" for kind in KIND_PREFIXES}
)
# The platform has no bot user or service user events; neither does this catalog.
NO_EVENTS = ["bot_user", "service_user", "principal", "abuse_report"]
# Nor Kubernetes operator events (its event type reference lists none).
NO_EVENTS += ["kubernetes_operator"]
# Nor AI gateway API key events (none documented; the Go client v8 has the resource only).
NO_EVENTS += ["ai_gateway_api_key"]
# Nor access token events: the platform's documents describe none (issue 28), so none are
# invented here.
NO_EVENTS += ["access_token"]


@pytest.fixture
def sources(admin, factory) -> str:  # type: ignore[no-untyped-def]
    subscription = factory.row(EventSubscription, admin.creds.account_id)
    return f"/event_subscriptions/{subscription.id}/sources"


def test_catalog_has_traffic_events_and_every_served_resource():
    """The spec's `EventType` enum (hand-written, the source of truth) lists the traffic
    events and the three of each kind the models declare, and nothing else."""
    verbs = ("created", "updated", "deleted")
    declared = {f"{resource}_{verb}.v0" for resource in SERVED for verb in verbs}
    assert sorted(CATALOG) == sorted({*TRAFFIC, *declared})
    for resource in NO_EVENTS:
        assert not any(type_.startswith(f"{resource}_") for type_ in CATALOG)
    assert len(CATALOG) == len(set(CATALOG))
    # A subscription holds each type at most once: its list of sources is as long at most.
    assert SPEC["components"]["schemas"]["EventSources"]["maxItems"] == len(CATALOG)


@pytest.mark.parametrize(
    "event_type", [*TRAFFIC, "endpoint_created.v0", "application_user_deleted.v0"]
)
def test_new_types_are_accepted(admin, sources, event_type):
    created = admin.post(sources, json={"type": event_type})
    assert created.status_code == 201, created.text
    assert admin.get(f"{sources}/{event_type}").json()["type"] == event_type


@pytest.mark.parametrize(
    "event_type",
    [
        "http_request_complete",
        "http_request_complete.v1",
        "HTTP_REQUEST_COMPLETE.V0",
        "tcp_connection_opened.v0",
        "event_source_created.v0",
        " tcp_connection_closed.v0",
    ],
)
def test_other_types_are_still_refused(admin, sources, event_type):
    body = assert_error(admin.post(sources, json={"type": event_type}), 400, "ERR_INVALID_FIELD")
    assert body["details"]["field"] == "type"
