"""An account's event routes as the events service reads them (tunnelgw.services.event_routes):
each event type's pairs, and their deliveries as stored when none fails."""

from __future__ import annotations

import orjson

from tunnelgw.models.event_delivery import DELIVERED, STORED_FIELDS
from tunnelgw.services import event_routes
from tunnelgw.storage.records import JsonText, json_text


def test_a_route_holds_its_pairs_and_their_deliveries_as_stored():
    text = (
        '{"tunnel_created.v0": [["esb_1", "ed_1"], ["esb_2", "ed_1"]], "x.v0": [["esb_1", "ed_2"]]}'
    )
    routes = event_routes.parse(text)
    route = routes["tunnel_created.v0"]
    assert route.pairs == (("esb_1", "ed_1"), ("esb_2", "ed_1"))
    stored = orjson.loads(str(route.delivered))
    assert stored == [["esb_1", "ed_1", DELIVERED, None], ["esb_2", "ed_1", DELIVERED, None]]
    assert all(len(item) == len(STORED_FIELDS) for item in stored)
    # Already encoded: a JSON column takes it as it is.
    assert type(route.delivered) is JsonText
    assert json_text(route.delivered) is route.delivered
    assert routes["x.v0"].pairs == (("esb_1", "ed_2"),)


def test_routes_are_parsed_once_per_text_and_none_routes_nothing():
    text = '{"x.v0": [["esb_1", "ed_1"]]}'
    assert event_routes.parse(text) is event_routes.parse("".join(["{", text[1:]]))
    assert event_routes.parse(None) == {}
