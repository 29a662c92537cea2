"""Endpoint configurations: /endpoint_configurations/{id} (related-resources.md), get only:
the reserved domains' `http_endpoint_configuration` / `https_endpoint_configuration` Refs
answer."""

from __future__ import annotations

import uuid

from tests.factories import assert_error
from tunnelgw.core import ids
from tunnelgw.models import EndpointConfiguration

BASE = "http://testserver"


def test_get_the_configuration_a_reserved_domain_names(admin, factory):
    config = factory.row(
        EndpointConfiguration, admin.creds.account_id, type="http", description="redirect"
    )
    domain = admin.post("/reserved_domains", json={"name": f"d{uuid.uuid4().hex[:12]}"}).json()
    patched = admin.patch(
        f"/reserved_domains/{domain['id']}", json={"http_endpoint_configuration_id": config.id}
    ).json()
    ref = patched["http_endpoint_configuration"]
    shown = admin.get(ref["uri"].removeprefix(BASE)).json()
    assert shown == {
        "id": config.id,
        "uri": ref["uri"],
        "created_at": shown["created_at"],
        "type": "http",
        "description": "redirect",
        "metadata": "",
    }


def test_unknown_and_foreign_ids_are_not_found(admin, other, factory):
    config = factory.row(EndpointConfiguration, admin.creds.account_id)
    assert_error(other.get(f"/endpoint_configurations/{config.id}"), 404, "ERR_NOT_FOUND")
    assert_error(admin.get(f"/endpoint_configurations/{ids.new_id('ec')}"), 404, "ERR_NOT_FOUND")
    assert_error(admin.get("/endpoint_configurations"), 404, "ERR_ROUTE_NOT_FOUND")
