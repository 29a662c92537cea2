"""Routes of HTTPS edges: /edges/https/{edge_id}/routes/{id} (related-resources.md), get
only: the `route` Ref of application sessions answers."""

from __future__ import annotations

from tests.factories import assert_error
from tunnelgw.core import ids
from tunnelgw.models import EdgeRoute
from tunnelgw.models.edge_route import UNMODELLED_MODULES

BASE = "http://testserver"


def test_get(admin, factory):
    edge_id = ids.new_id("edghts")
    route = factory.row(EdgeRoute, admin.creds.account_id, edge_id=edge_id, match="/docs", meta="m")
    url = f"/edges/https/{edge_id}/routes/{route.id}"
    shown = admin.get(url).json()
    assert shown == {
        "id": route.id,
        "uri": BASE + url,
        "edge_id": edge_id,
        "created_at": shown["created_at"],
        "match_type": "path_prefix",
        "match": "/docs",
        "description": "",
        "metadata": "m",
        "backend": None,
        **dict.fromkeys(UNMODELLED_MODULES),
    }


def test_a_route_of_another_edge_or_account_is_not_found(admin, other, factory):
    edge_id = ids.new_id("edghts")
    route = factory.row(EdgeRoute, admin.creds.account_id, edge_id=edge_id)
    assert_error(
        admin.get(f"/edges/https/{ids.new_id('edghts')}/routes/{route.id}"), 404, "ERR_NOT_FOUND"
    )
    assert_error(other.get(f"/edges/https/{edge_id}/routes/{route.id}"), 404, "ERR_NOT_FOUND")
    assert_error(
        admin.get(f"/edges/https/{edge_id}/routes/{ids.new_id('edghtsrt')}"), 404, "ERR_NOT_FOUND"
    )
    error = assert_error(
        admin.get(f"/edges/https/edgtls_{'0' * 27}/routes/{route.id}"), 400, "ERR_INVALID_PARAMETER"
    )
    assert error["details"]["param"] == "edge_id"
