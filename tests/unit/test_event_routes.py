"""An account's event routes as the events service reads them (tunnelgw.services.event_routes):
each event type's pairs, their deliveries as stored when none fails, and the digest the
route's row is kept by."""

from __future__ import annotations

from tunnelgw.models.event_delivery import DELIVERED, STORED_FIELDS
from tunnelgw.models.event_route import digest_of
from tunnelgw.services import event_routes


def test_a_route_holds_its_pairs_and_their_deliveries_as_stored():
    text = (
        '{"tunnel_created.v0": [["esb_1", "ed_1"], ["esb_2", "ed_1"]], "x.v0": [["esb_1", "ed_2"]]}'
    )
    routes = event_routes.parse(text)
    route = routes["tunnel_created.v0"]
    assert route.pairs == (("esb_1", "ed_1"), ("esb_2", "ed_1"))
    stored = route.stored
    assert stored == [["esb_1", "ed_1", DELIVERED, None], ["esb_2", "ed_1", DELIVERED, None]]
    assert all(len(item) == len(STORED_FIELDS) for item in stored)
    assert routes["x.v0"].pairs == (("esb_1", "ed_2"),)
    # The digest is of the pairs in their order: another order, or another pair, is another
    # route.
    assert route.digest == digest_of(route.pairs)
    assert len(route.digest) == 32
    assert digest_of(reversed(route.pairs)) != route.digest
    assert routes["x.v0"].digest != route.digest


def test_routes_are_parsed_once_per_text_and_none_routes_nothing():
    text = '{"x.v0": [["esb_1", "ed_1"]]}'
    assert event_routes.parse(text) is event_routes.parse("".join(["{", text[1:]]))
    assert event_routes.parse(None) == {}
