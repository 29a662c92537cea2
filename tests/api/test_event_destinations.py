"""Event destinations (/event_destinations): CRUD, exactly one target kind with its fields
checked, write-only credentials (sealed under the KEK, shown as "", kept on a PATCH that
leaves them empty, invisible to filters and to a database dump), and tenant isolation."""

from __future__ import annotations

import secrets
from typing import Any

import pytest

from tests.factories import assert_error, database_dump, in_dump
from tunnelgw import seeding
from tunnelgw.crypto import keys
from tunnelgw.models import EventDestination
from tunnelgw.seeding import FixtureError
from tunnelgw.storage import records

PATH = "/event_destinations"
ROLE = {"role": {"role_arn": "arn:aws:iam::123456789012:role/events"}}
TENANT, CLIENT = "72f988bf-86f1-41af-91ab-2d7cd011db47", "0b8f5c1e-5a3d-4f7e-9c1a-1d2e3f4a5b6c"


def _creds(secret: str) -> dict[str, Any]:
    return {"creds": {"aws_access_key_id": "AKIAIOSFODNN7EXAMPLE", "aws_secret_access_key": secret}}


def targets(secret: str) -> dict[str, dict[str, Any]]:
    """A valid target of each kind; those with a place for one carry `secret`."""
    return {
        "firehose": {
            "delivery_stream_arn": "arn:aws:firehose:us-east-1:123456789012:deliverystream/ev",
            "auth": _creds(secret),
        },
        "kinesis": {
            "stream_arn": "arn:aws:kinesis:us-east-2:123456789012:stream/events",
            "auth": ROLE,
        },
        "cloudwatch_logs": {
            "log_group_arn": "arn:aws:logs:eu-west-1:123456789012:log-group:events",
            "auth": _creds(secret),
        },
        "datadog": {"api_key": secret, "ddsite": "datadoghq.eu"},
        "azure_logs_ingestion": {
            "tenant_id": TENANT,
            "client_id": CLIENT,
            "client_secret": secret,
            "logs_ingestion_uri": "https://dce-1.westeurope-1.ingest.monitor.azure.com",
            "data_collection_rule_id": "dcr-" + "0a" * 16,
            "data_collection_stream_name": "Custom-Events_CL",
        },
    }


def _made(session, kind: str = "datadog", secret: str = "dd-secret-1", **body):  # type: ignore[no-untyped-def]
    created = session.post(PATH, json={"target": {kind: targets(secret)[kind]}, **body})
    assert created.status_code == 201, created.text
    return created.json()


def _row(factory, id_: str) -> Any:  # type: ignore[no-untyped-def]
    async def read(unit):  # type: ignore[no-untyped-def]
        return await unit.get(EventDestination, id_)

    return factory.query(read)


def _credential(factory, id_: str) -> str | None:  # type: ignore[no-untyped-def]
    sealed = _row(factory, id_).sealed_credential
    return None if sealed is None else keys.unwrap(keys.current(), sealed, id_.encode()).decode()


@pytest.mark.parametrize("kind", list(targets("s")))
def test_each_kind_is_created_read_listed_and_deleted(admin, factory, kind):
    secret = "s-" + secrets.token_hex(8)
    made = _made(admin, kind, secret, description="audit", metadata='{"env":"dev"}')
    assert made["id"].startswith("ed_")
    assert made["uri"] == f"http://testserver{PATH}/{made['id']}"
    assert (made["description"], made["metadata"], made["format"]) == (
        "audit",
        '{"env":"dev"}',
        "json",
    )
    assert list(made["target"]) == [kind]
    assert secret not in str(made)
    expected = targets("")[kind]
    if kind == "datadog":
        expected = {**expected, "ddtags": "", "service": ""}
    assert made["target"][kind] == expected
    url = f"{PATH}/{made['id']}"
    assert admin.get(url).json() == made
    assert made in admin.get(PATH).json()["event_destinations"]
    assert _credential(factory, made["id"]) == (None if kind == "kinesis" else secret)
    assert admin.delete(url).status_code == 204
    assert_error(admin.get(url), 404, "ERR_NOT_FOUND")


def test_the_target_sets_exactly_one_kind(admin):
    every = targets("k")
    refused = assert_error(admin.post(PATH, json={"target": {}}), 400, "ERR_INVALID_EVENT_TARGET")
    assert refused["details"]["field"] == "target"
    two = {"datadog": every["datadog"], "kinesis": every["kinesis"]}
    assert (
        "it sets kinesis, datadog."
        in assert_error(admin.post(PATH, json={"target": two}), 400, "ERR_INVALID_EVENT_TARGET")[
            "msg"
        ]
    )
    assert_error(admin.post(PATH, json={}), 400, "ERR_MISSING_FIELD")
    assert_error(admin.post(PATH, json={"target": None}), 400, "ERR_MISSING_FIELD")
    # The others null, as the platform's clients send them: one kind.
    nulls = dict.fromkeys(every, None) | {"kinesis": every["kinesis"]}
    assert list(admin.post(PATH, json={"target": nulls}).json()["target"]) == ["kinesis"]


@pytest.mark.parametrize("auth", [{}, {"role": None, "creds": None}, {**ROLE, **_creds("x")}])
def test_an_aws_target_authenticates_one_way(admin, auth):
    target = {"firehose": {**targets("x")["firehose"], "auth": auth}}
    refused = assert_error(admin.post(PATH, json={"target": target}), 400, "ERR_INVALID_AWS_AUTH")
    assert refused["details"]["field"] == "target.firehose.auth"


@pytest.mark.parametrize(
    ("kind", "field"),
    [
        ("datadog", "target.datadog.api_key"),
        ("firehose", "target.firehose.auth.creds.aws_secret_access_key"),
        ("cloudwatch_logs", "target.cloudwatch_logs.auth.creds.aws_secret_access_key"),
        ("azure_logs_ingestion", "target.azure_logs_ingestion.client_secret"),
    ],
)
def test_a_new_target_needs_its_credential(admin, kind, field):
    for secret in ("", None):
        target = targets("x")[kind]
        *parents, leaf = field.split(".")[2:]
        holder = target
        for name in parents:
            holder = holder[name]
        holder.pop(leaf) if secret is None else holder.update({leaf: secret})
        refused = assert_error(
            admin.post(PATH, json={"target": {kind: target}}), 400, "ERR_MISSING_FIELD"
        )
        assert refused["details"]["field"] == field


@pytest.mark.parametrize(
    ("kind", "change", "code", "field"),
    [
        ("kinesis", {"stream_arn": None}, "ERR_MISSING_FIELD", "target.kinesis.stream_arn"),
        ("kinesis", {"auth": None}, "ERR_MISSING_FIELD", "target.kinesis.auth"),
        (
            "kinesis",
            {"stream_arn": "arn:aws:firehose:us-east-1:1:deliverystream/x"},
            "ERR_INVALID_FIELD",
            "target.kinesis.stream_arn",
        ),
        ("firehose", {"delivery_stream_arn": "s3://bucket"}, "ERR_INVALID_FIELD", None),
        ("azure_logs_ingestion", {"tenant_id": "contoso"}, "ERR_INVALID_FIELD", None),
        ("azure_logs_ingestion", {"logs_ingestion_uri": "http://x"}, "ERR_INVALID_FIELD", None),
        ("azure_logs_ingestion", {"data_collection_rule_id": "42"}, "ERR_INVALID_FIELD", None),
        ("azure_logs_ingestion", {"data_collection_stream_name": None}, "ERR_MISSING_FIELD", None),
        ("datadog", {"site": "eu"}, "ERR_UNKNOWN_FIELD", None),
        ("datadog", {"ddtags": 7}, "ERR_WRONG_TYPE", "target.datadog.ddtags"),
    ],
)
def test_each_kind_checks_its_fields(admin, kind, change, code, field):
    target = {**targets("x")[kind], **change}
    target = {name: value for name, value in target.items() if value is not None}
    refused = assert_error(admin.post(PATH, json={"target": {kind: target}}), 400, code)
    assert refused["details"]["field"].startswith(field or f"target.{kind}.")


def test_format_is_json_in_either_case(admin):
    assert _made(admin, format="")["format"] == "json"
    assert _made(admin, format="JSON")["format"] == "JSON"
    body = {"target": {"datadog": targets("k")["datadog"]}, "format": "xml"}
    assert (
        assert_error(admin.post(PATH, json=body), 400, "ERR_INVALID_FIELD")["details"]["field"]
        == "format"
    )


def test_credentials_are_sealed_and_never_shown_or_matched(admin, factory, settings):
    secret = "dd-" + secrets.token_hex(16)
    made = _made(admin, secret=secret)
    row = _row(factory, made["id"])
    stored = str(records.as_dict(row))
    assert secret not in stored
    assert row.target == {
        "datadog": {"api_key": "", "ddsite": "datadoghq.eu", "ddtags": "", "service": ""}
    }
    with pytest.raises(keys.UnwrapError):  # bound to its row
        keys.unwrap(keys.current(), row.sealed_credential, b"ed_another")
    assert not in_dump(secret.encode(), database_dump(settings))
    found = admin.get(PATH, params={"filter": f'obj.target.datadog.api_key == "{secret}"'})
    assert found.json()["event_destinations"] == []
    blank = admin.get(
        PATH, params={"filter": f'obj.id == "{made["id"]}" && obj.target.datadog.api_key == ""'}
    )
    assert [item["id"] for item in blank.json()["event_destinations"]] == [made["id"]]


def test_update_keeps_an_empty_credential_and_replaces_a_given_one(admin, factory):
    made = _made(admin, "firehose", "first")
    url = f"{PATH}/{made['id']}"
    # Sending back what was read (secret "") keeps the stored secret.
    changed = admin.patch(
        url, json={"target": made["target"], "description": "d", "format": "JSON"}
    )
    assert changed.status_code == 200, changed.text
    assert changed.json() == {**made, "description": "d", "format": "JSON"}
    assert _credential(factory, made["id"]) == "first"
    assert (
        admin.patch(url, json={"target": {"firehose": targets("second")["firehose"]}}).status_code
        == 200
    )
    assert _credential(factory, made["id"]) == "second"
    assert admin.patch(url, json={"format": "", "metadata": None}).json()["format"] == "JSON"
    # Another kind, or AWS creds where a role was, needs its credential.
    refused = assert_error(
        admin.patch(url, json={"target": {"datadog": {"ddsite": "datadoghq.com"}}}),
        400,
        "ERR_MISSING_FIELD",
    )
    assert refused["details"]["field"] == "target.datadog.api_key"
    role = {"firehose": {**targets("")["firehose"], "auth": ROLE}}
    assert admin.patch(url, json={"target": role}).json()["target"] == role
    assert _credential(factory, made["id"]) is None
    assert_error(
        admin.patch(url, json={"target": {"firehose": targets("")["firehose"]}}),
        400,
        "ERR_MISSING_FIELD",
    )
    assert_error(admin.patch(url, json={"target": {}}), 400, "ERR_INVALID_EVENT_TARGET")
    assert admin.get(url).json()["target"] == role  # nothing half-written


def test_other_accounts_cannot_see_or_touch_a_destination(admin, other):
    made = _made(admin)
    url = f"{PATH}/{made['id']}"
    assert_error(other.get(url), 404, "ERR_NOT_FOUND")
    assert_error(other.patch(url, json={"description": "x"}), 404, "ERR_NOT_FOUND")
    assert_error(other.delete(url), 404, "ERR_NOT_FOUND")
    assert made["id"] not in {item["id"] for item in other.get(PATH).json()["event_destinations"]}
    assert admin.get(url).json() == made


def test_list_pages(admin):
    made = [_made(admin, description=f"p{i}")["id"] for i in range(3)]
    first = admin.get(PATH, params={"limit": 2}).json()
    assert [item["id"] for item in first["event_destinations"]] == made[::-1][:2]
    nxt = first["next_page_uri"].removeprefix("http://testserver")
    assert admin.get(nxt).json()["event_destinations"][0]["id"] == made[0]


FIXTURE = """\
version: 1
api:
  event_destinations:
    - ref: stream
      target:
        kinesis:
          stream_arn: arn:aws:kinesis:us-east-1:1:stream/s
          auth: {role: {role_arn: "arn:aws:iam::1:role/r"}}
    - {ref: dd, description: to datadog, target: {datadog: {api_key: fixture-dd-key}}}
  event_subscriptions:
    - {ref: audit, sources: [{type: api_key_created.v0}], destination_ids: ["@stream", "@dd"]}
"""


def test_fixtures_create_destinations_and_subscriptions_naming_them(
    admin, factory, settings, tmp_path
):
    path = tmp_path / "destinations.yaml"
    path.write_text(FIXTURE)
    labels = seeding.load(path, settings, admin.creds.account_id)["labels"]
    subscription = admin.get(f"/event_subscriptions/{labels['audit']}").json()
    assert [ref["id"] for ref in subscription["destinations"]] == sorted(
        [labels["stream"], labels["dd"]]
    )
    dd = admin.get(f"{PATH}/{labels['dd']}").json()
    assert (dd["description"], dd["target"]["datadog"]["api_key"]) == ("to datadog", "")
    assert _credential(factory, labels["dd"]) == "fixture-dd-key"
    # A label of another kind is refused before anything is written.
    wrong = tmp_path / "wrong.yaml"
    wrong.write_text(
        "version: 1\napi:\n  ip_policies: [{ref: p}]\n"
        '  event_subscriptions: [{destination_ids: ["@p"]}]\n'
    )
    with pytest.raises(FixtureError) as caught:
        seeding.load(wrong, settings, admin.creds.account_id)
    assert not caught.value.written
    assert "event_destination" in caught.value.issues[0].message
