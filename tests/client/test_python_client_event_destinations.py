"""The platform's official Python client (PyPI `ngrok-api` 0.19) on event destinations and the
event subscriptions that name them, against the live server of test_python_client.py (its
fixtures): every operation of its `event_destinations` client, on each target kind."""

from __future__ import annotations

from typing import Any

import pytest

from tests.client import test_python_client as base
from tests.client.test_python_client import touch_all, walk

ngrok = pytest.importorskip("ngrok")

# The live server and client of test_python_client.py (one more server, for this module).
live, client, labels = base.live, base.client, base.labels

pytestmark = pytest.mark.client


class _Props:
    """A value the client's `extract_props` sends as it is. Its own `EventTarget` keeps nested
    model objects in `_props`, which `requests` cannot serialize (ngrok-api 0.19), so a target
    built with the client's classes never leaves the client."""

    def __init__(self, props: dict[str, Any]) -> None:
        self._props = props


EVENT_TARGETS = {
    "kinesis": {
        "stream_arn": "arn:aws:kinesis:us-east-1:123456789012:stream/audit",
        "auth": {"role": {"role_arn": "arn:aws:iam::123456789012:role/events"}},
    },
    "firehose": {
        "delivery_stream_arn": "arn:aws:firehose:us-east-1:123456789012:deliverystream/audit",
        "auth": {
            "creds": {
                "aws_access_key_id": "AKIAIOSFODNN7EXAMPLE",
                "aws_secret_access_key": "aws-secret",
            }
        },
    },
    "cloudwatch_logs": {
        "log_group_arn": "arn:aws:logs:us-east-1:123456789012:log-group:audit",
        "auth": {"role": {"role_arn": "arn:aws:iam::123456789012:role/events"}},
    },
    "datadog": {"api_key": "dd-secret", "ddsite": "datadoghq.eu"},
    "azure_logs_ingestion": {
        "tenant_id": "72f988bf-86f1-41af-91ab-2d7cd011db47",
        "client_id": "0b8f5c1e-5a3d-4f7e-9c1a-1d2e3f4a5b6c",
        "client_secret": "azure-secret",
        "logs_ingestion_uri": "https://dce-1.westeurope-1.ingest.monitor.azure.com",
        "data_collection_rule_id": "dcr-" + "0a" * 16,
        "data_collection_stream_name": "Custom-Events_CL",
    },
}


def test_event_destinations_and_subscriptions_naming_them(client, labels):
    destinations, subscriptions = client.event_destinations, client.event_subscriptions
    made = {
        kind: destinations.create(description=kind, target=_Props({kind: target}))
        for kind, target in EVENT_TARGETS.items()
    }
    for kind, destination in made.items():
        assert destination.format == "json"  # the client sends "": unset
        assert touch_all(destinations.get(destination.id)) >= 10
        assert getattr(destination.target, kind) is not None
    assert made["datadog"].target.datadog.api_key == ""  # write-only
    assert made["firehose"].target.firehose.auth.creds.aws_secret_access_key == ""
    assert made["azure_logs_ingestion"].target.azure_logs_ingestion.client_secret == ""
    assert made["kinesis"].target.kinesis.auth.creds is None
    fixture = {labels["audit-stream"], labels["audit-datadog"]}
    listed = {d.id for d in walk(destinations.list(limit=2))}
    assert fixture | {d.id for d in made.values()} <= listed
    found = destinations.list(filter='obj.description == "datadog"').event_destinations
    assert [d.id for d in found] == [made["datadog"].id]
    dd = made["datadog"].id
    assert destinations.update(dd, description="dd", format="JSON").format == "JSON"
    moved = destinations.update(dd, target=_Props({"datadog": {"ddsite": "datadoghq.com"}}))
    assert (moved.description, moved.target.datadog.ddsite) == ("dd", "datadoghq.com")
    # Subscriptions name them; the client sends `destination_ids: []` with every update.
    subscription = subscriptions.create(description="to dd", destination_ids=[dd])
    assert [ref.id for ref in subscription.destinations] == [dd]
    assert touch_all(subscriptions.get(subscription.id)) >= 6
    updated = subscriptions.update(subscription.id, description="still dd")
    assert [ref.id for ref in updated.destinations] == [dd]
    with pytest.raises(ngrok.Error) as in_use:
        destinations.delete(dd)
    assert in_use.value.error_code == "ERR_EVENT_DESTINATION_IN_USE"
    with pytest.raises(ngrok.Error) as refused:
        destinations.create(target=_Props({}))
    assert refused.value.error_code == "ERR_INVALID_EVENT_TARGET"
    subscriptions.delete(subscription.id)
    for destination in made.values():
        destinations.delete(destination.id)
    with pytest.raises(ngrok.NotFoundError):
        destinations.get(dd)
