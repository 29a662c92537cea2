"""Event subscriptions: /event_subscriptions (related-resources.md): `sources` are the event
source rows the event source operations serve; `destination_ids` name the account's event
destinations, shown as Refs that answer; on update `[]` changes nothing."""

from __future__ import annotations

from tests.factories import assert_error

PATH = "/event_subscriptions"
BASE = "http://testserver"
UNKNOWN_ED = "ed_0ERZHb3hGoaYLY3tKA0JZBzonDJ"


def _sources(*types: str) -> list[dict[str, str]]:
    return [{"type": type_} for type_ in types]


def test_create_get_list_update_delete(admin):
    created = admin.post(
        PATH,
        json={
            "description": "audit",
            "metadata": '{"team": "sec"}',
            "sources": _sources("ip_policy_updated.v0", "api_key_created.v0"),
        },
    )
    assert created.status_code == 201, created.text
    sub = created.json()
    assert set(sub) == {
        "id",
        "uri",
        "created_at",
        "description",
        "metadata",
        "sources",
        "destinations",
    }
    assert sub["id"].startswith("esb_")
    url = f"{PATH}/{sub['id']}"
    assert sub["uri"] == BASE + url
    # sorted by type, each the event source operations' object
    assert sub["sources"] == [
        {
            "type": "api_key_created.v0",
            "fields": [],
            "uri": f"{BASE}{url}/sources/api_key_created.v0",
        },
        {
            "type": "ip_policy_updated.v0",
            "fields": [],
            "uri": f"{BASE}{url}/sources/ip_policy_updated.v0",
        },
    ]
    assert sub["destinations"] == []
    for source in sub["sources"]:
        assert admin.get(source["uri"].removeprefix(BASE)).json() == source
    assert admin.get(f"{url}/sources").json()["sources"] == sub["sources"]

    assert admin.get(url).json() == sub
    assert sub in admin.get(PATH).json()["event_subscriptions"]
    updated = admin.patch(url, json={"description": "audit trail"}).json()
    assert updated == {**sub, "description": "audit trail"}
    assert admin.delete(url).status_code == 204
    assert_error(admin.get(url), 404, "ERR_NOT_FOUND")
    assert_error(admin.get(f"{url}/sources"), 404, "ERR_NOT_FOUND")


def test_sources_are_the_event_source_rows(admin):
    sub = admin.post(PATH, json={}).json()
    url = f"{PATH}/{sub['id']}"
    assert (sub["sources"], sub["description"]) == ([], "")
    added = admin.post(f"{url}/sources", json={"type": "reserved_addr_created.v0"}).json()
    assert admin.get(url).json()["sources"] == [added]
    listed = {s["id"]: s for s in admin.get(PATH).json()["event_subscriptions"]}
    assert listed[sub["id"]]["sources"] == [added]
    assert admin.delete(added["uri"].removeprefix(BASE)).status_code == 204
    assert admin.get(url).json()["sources"] == []


def test_what_the_clients_send_is_accepted(admin):
    """Python: every key, empty ones included; on update `"sources": []` every time."""
    sub = admin.post(
        PATH, json={"metadata": "", "description": "", "sources": [], "destination_ids": []}
    ).json()
    url = f"{PATH}/{sub['id']}"
    admin.post(f"{url}/sources", json={"type": "api_key_created.v0"})
    kept = admin.patch(url, json={"description": "d2", "sources": []}).json()
    assert [s["type"] for s in kept["sources"]] == ["api_key_created.v0"]
    assert kept["description"] == "d2"
    also = admin.patch(url, json={"destination_ids": [], "sources": None}).json()
    assert also == kept


def test_update_replaces_the_whole_set_of_sources(admin):
    sub = admin.post(
        PATH, json={"sources": _sources("api_key_created.v0", "api_key_deleted.v0")}
    ).json()
    url = f"{PATH}/{sub['id']}"
    updated = admin.patch(
        url, json={"sources": _sources("tls_edge_created.v0", "api_key_deleted.v0")}
    ).json()
    assert [s["type"] for s in updated["sources"]] == ["api_key_deleted.v0", "tls_edge_created.v0"]
    assert admin.get(f"{url}/sources").json()["sources"] == updated["sources"]
    assert_error(admin.get(f"{url}/sources/api_key_created.v0"), 404, "ERR_NOT_FOUND")


def test_unknown_destinations_cannot_be_named(admin):
    for method, url in (("POST", PATH), ("PATCH", f"{PATH}/{admin.post(PATH).json()['id']}")):
        response = admin.request(method, url, json={"destination_ids": [UNKNOWN_ED]})
        error = assert_error(response, 404, "ERR_REFERENCE_NOT_FOUND")
        assert error["details"]["field"] == "destination_ids"
    assert len(admin.get(PATH).json()["event_subscriptions"]) == 1  # the one PATCHed


def test_invalid_bodies(admin):
    cases = [
        ({"sources": _sources("made_up.v0")}, "ERR_INVALID_FIELD", "sources.0.type"),
        ({"sources": ["api_key_created.v0"]}, "ERR_WRONG_TYPE", "sources.0"),
        ({"sources": [{}]}, "ERR_MISSING_FIELD", "sources.0.type"),
        (
            {"sources": _sources("api_key_created.v0", "api_key_created.v0")},
            "ERR_INVALID_FIELD",
            "sources",
        ),
        (
            {"sources": [{"type": "api_key_created.v0", "uri": "x"}]},
            "ERR_UNKNOWN_FIELD",
            "sources.0.uri",
        ),
        ({"destination_ids": ["ed_x"]}, "ERR_INVALID_FIELD", "destination_ids.0"),
        ({"description": "é" * 128}, "ERR_FIELD_TOO_LONG", "description"),
        ({"metadata": "x" * 4097}, "ERR_FIELD_TOO_LONG", "metadata"),
        ({"destinations": []}, "ERR_UNKNOWN_FIELD", "destinations"),
    ]
    sub = admin.post(PATH, json={}).json()
    for body, code, field in cases:
        for method, url in (("POST", PATH), ("PATCH", f"{PATH}/{sub['id']}")):
            error = assert_error(admin.request(method, url, json=body), 400, code)
            assert error["details"]["field"] == field, (body, method)
    assert [s["id"] for s in admin.get(PATH).json()["event_subscriptions"]] == [sub["id"]]
    assert admin.get(f"{PATH}/{sub['id']}").json() == sub


def test_every_catalog_type_fits_in_one_subscription(admin):
    from tests.api.test_event_sources import CATALOG

    sub = admin.post(PATH, json={"sources": _sources(*CATALOG)}).json()
    assert [s["type"] for s in sub["sources"]] == sorted(CATALOG)


def test_list_pages_newest_first(admin):
    made = [
        admin.post(PATH, json={"sources": _sources("api_key_created.v0")}).json() for _ in range(3)
    ]
    first = admin.get(PATH, params={"limit": 2}).json()
    assert [s["id"] for s in first["event_subscriptions"]] == [made[2]["id"], made[1]["id"]]
    assert first["event_subscriptions"][0] == made[2]
    rest = admin.get(PATH, params={"limit": 2, "beforeId": made[1]["id"]}).json()
    assert rest["event_subscriptions"] == [made[0]]
    assert rest["next_page_uri"] is None


def test_other_accounts_see_nothing(admin, other):
    sub = admin.post(PATH, json={"sources": _sources("api_key_created.v0")}).json()
    url = f"{PATH}/{sub['id']}"
    assert_error(other.get(url), 404, "ERR_NOT_FOUND")
    assert_error(
        other.patch(url, json={"sources": _sources("api_key_deleted.v0")}), 404, "ERR_NOT_FOUND"
    )
    assert_error(other.delete(url), 404, "ERR_NOT_FOUND")
    assert_error(other.get(f"{url}/sources"), 404, "ERR_NOT_FOUND")
    assert other.get(PATH).json()["event_subscriptions"] == []
    assert admin.get(url).json() == sub


def _destination(session) -> str:  # type: ignore[no-untyped-def]
    made = session.post("/event_destinations", json={"target": {"datadog": {"api_key": "dd-key"}}})
    assert made.status_code == 201, made.text
    return str(made.json()["id"])


def _refs(*ids: str) -> list[dict[str, str]]:
    return [{"id": id_, "uri": f"{BASE}/event_destinations/{id_}"} for id_ in sorted(ids)]


def test_destinations_are_linked_and_shown_as_refs_that_answer(admin):
    first, second, third = (_destination(admin) for _ in range(3))
    created = admin.post(PATH, json={"destination_ids": [second, first, second]})
    assert created.status_code == 201, created.text
    sub = created.json()
    assert sub["destinations"] == _refs(first, second)  # each once, in id order
    for ref in sub["destinations"]:
        assert admin.get(ref["uri"].removeprefix(BASE)).json()["id"] == ref["id"]
    url = f"{PATH}/{sub['id']}"
    assert admin.get(url).json() == sub
    assert sub in admin.get(PATH).json()["event_subscriptions"]
    # [] and null change nothing (the Python client sends [] with every update).
    kept = admin.patch(url, json={"destination_ids": [], "description": "d"}).json()
    assert kept["destinations"] == _refs(first, second)
    assert (
        admin.patch(url, json={"destination_ids": None}).json()["destinations"]
        == kept["destinations"]
    )
    replaced = admin.patch(url, json={"destination_ids": [third]}).json()
    assert replaced["destinations"] == _refs(third)
    assert admin.get(url).json() == replaced
    # A refused PATCH changes nothing.
    refused = admin.patch(url, json={"destination_ids": [first, UNKNOWN_ED], "description": "x"})
    assert assert_error(refused, 404, "ERR_REFERENCE_NOT_FOUND")["details"]["field"] == (
        "destination_ids"
    )
    assert admin.get(url).json() == replaced


def test_another_accounts_destination_cannot_be_named(admin, other):
    theirs = _destination(other)
    for method, url in (("POST", PATH), ("PATCH", f"{PATH}/{admin.post(PATH).json()['id']}")):
        response = admin.request(method, url, json={"destination_ids": [theirs]})
        error = assert_error(response, 404, "ERR_REFERENCE_NOT_FOUND")
        assert error["details"]["field"] == "destination_ids"


def test_a_destination_in_use_cannot_be_deleted(admin):
    destination = _destination(admin)
    ed_url = f"/event_destinations/{destination}"
    subs = sorted(
        admin.post(PATH, json={"destination_ids": [destination]}).json()["id"] for _ in range(2)
    )
    refused = assert_error(admin.delete(ed_url), 409, "ERR_EVENT_DESTINATION_IN_USE")
    assert refused["details"]["subscriptions"] == ",".join(subs)
    assert refused["details"]["id"] == destination
    assert admin.get(ed_url).status_code == 200
    # Taken out of one subscription, deleted with the other: then it can go.
    other_destination = _destination(admin)
    assert admin.patch(f"{PATH}/{subs[0]}", json={"destination_ids": [other_destination]}).json()[
        "destinations"
    ] == _refs(other_destination)
    assert admin.delete(f"{PATH}/{subs[1]}").status_code == 204
    assert admin.delete(ed_url).status_code == 204
    assert_error(admin.get(ed_url), 404, "ERR_NOT_FOUND")


def test_traffic_sources_keep_the_fields_they_capture(admin):
    """The platform's Terraform provider sends `sources[*].fields` (traffic event types only)
    and reads them back: stored as sent, replaced by an update that lists the source again,
    `[]` when none were chosen; fields on an audit event type are refused."""
    traffic = "http_request_complete.v0"
    made = admin.post(
        PATH,
        json={
            "sources": [
                {"type": traffic, "fields": ["status", "duration"]},
                {"type": "ip_policy_created.v0", "fields": None},
            ]
        },
    )
    assert made.status_code == 201, made.text
    url = f"{PATH}/{made.json()['id']}"
    by_type = {source["type"]: source["fields"] for source in made.json()["sources"]}
    assert by_type == {traffic: ["status", "duration"], "ip_policy_created.v0": []}
    assert admin.get(url).json()["sources"] == made.json()["sources"]
    assert admin.get(f"{url}/sources/{traffic}").json()["fields"] == ["status", "duration"]
    updated = admin.patch(url, json={"sources": [{"type": traffic, "fields": ["status"]}]})
    assert [s["fields"] for s in updated.json()["sources"]] == [["status"]]
    assert admin.get(url).json()["sources"] == updated.json()["sources"]
    cleared = admin.patch(url, json={"sources": [{"type": traffic}]}).json()
    assert cleared["sources"][0]["fields"] == []
    refused = admin.post(PATH, json={"sources": [{"type": "api_key_created.v0", "fields": ["x"]}]})
    assert assert_error(refused, 400, "ERR_INVALID_FIELD")["details"]["field"] == (
        "sources.0.fields"
    )
    twice = admin.post(PATH, json={"sources": [{"type": traffic, "fields": ["a", "a"]}]})
    assert_error(twice, 400, "ERR_INVALID_FIELD")
    added = admin.post(
        f"{url}/sources", json={"type": "tcp_connection_closed.v0", "fields": ["bytes"]}
    )
    assert added.status_code == 201, added.text
    assert added.json()["fields"] == ["bytes"]
    no_fields = admin.post(f"{url}/sources", json={"type": "api_key_created.v0", "fields": ["x"]})
    assert assert_error(no_fields, 400, "ERR_INVALID_FIELD")["details"]["field"] == "fields"
    assert admin.delete(url).status_code == 204
