"""The TLS edge backend module: /edges/tls/{id}/backend (spec 4.8). Edges and tunnel group
backends are not created through the API; the tests insert them as fixtures would."""

from __future__ import annotations

import pytest

from tests.factories import assert_error
from tunnelgw.core import ids
from tunnelgw.models import Edge, TunnelGroupBackend

UNKNOWN_BACKEND = "bkdtg_2pQcK8sTu9vWxY0zAb1Cd2Ef3Gh"


@pytest.fixture
def edge(admin, factory):  # type: ignore[no-untyped-def]
    return factory.row(Edge, admin.creds.account_id, id=ids.new_id("edgtls"), kind="tls")


@pytest.fixture
def backend(admin, factory):  # type: ignore[no-untyped-def]
    return factory.row(TunnelGroupBackend, admin.creds.account_id)


def _url(edge_id: str) -> str:
    return f"/edges/tls/{edge_id}/backend"


def _module(backend_id: str, enabled: bool = True) -> dict[str, object]:
    uri = f"http://testserver/backends/tunnel_group/{backend_id}"
    return {"enabled": enabled, "backend": {"id": backend_id, "uri": uri}}


def test_put_get_delete(admin, edge, backend):
    url = _url(edge.id)
    assert_error(admin.get(url), 404, "ERR_BACKEND_MODULE_NOT_SET")
    put = admin.put(url, json={"enabled": True, "backend_id": backend.id})
    assert put.status_code == 200, put.text
    assert put.json() == _module(backend.id)
    assert admin.get(url).json() == _module(backend.id)
    deleted = admin.delete(url)
    assert (deleted.status_code, deleted.content) == (204, b"")
    assert_error(admin.get(url), 404, "ERR_BACKEND_MODULE_NOT_SET")
    # Idempotent: deleting a module that is not set is 204 too.
    assert admin.delete(url).status_code == 204


@pytest.mark.parametrize("body", [{}, {"enabled": None}])
def test_enabled_defaults_to_true(admin, edge, backend, body):
    module = admin.put(_url(edge.id), json={**body, "backend_id": backend.id}).json()
    assert module == _module(backend.id, enabled=True)


def test_disabled_module(admin, edge, backend):
    url = _url(edge.id)
    assert admin.put(url, json={"enabled": False, "backend_id": backend.id}).json() == _module(
        backend.id, enabled=False
    )
    assert admin.get(url).json() == _module(backend.id, enabled=False)


def test_put_replaces_the_module(admin, factory, edge, backend):
    url = _url(edge.id)
    admin.put(url, json={"enabled": False, "backend_id": backend.id})
    second = factory.row(TunnelGroupBackend, admin.creds.account_id)
    # Omitted `enabled` is true again: PUT replaces, it does not merge.
    assert admin.put(url, json={"backend_id": second.id}).json() == _module(second.id)
    assert admin.get(url).json() == _module(second.id)


def test_modules_of_two_edges_are_independent(admin, factory, edge, backend):
    two = factory.row(Edge, admin.creds.account_id, id=ids.new_id("edgtls"), kind="tls")
    admin.put(_url(edge.id), json={"backend_id": backend.id})
    assert_error(admin.get(_url(two.id)), 404, "ERR_BACKEND_MODULE_NOT_SET")
    admin.put(_url(two.id), json={"enabled": False, "backend_id": backend.id})
    assert admin.delete(_url(edge.id)).status_code == 204
    assert admin.get(_url(two.id)).json() == _module(backend.id, enabled=False)


def test_unknown_or_foreign_backend_is_a_missing_reference(admin, other, factory, edge, backend):
    url = _url(edge.id)
    admin.put(url, json={"backend_id": backend.id})
    theirs = factory.row(TunnelGroupBackend, other.creds.account_id)
    for backend_id in (UNKNOWN_BACKEND, theirs.id):
        error = assert_error(
            admin.put(url, json={"backend_id": backend_id}), 404, "ERR_REFERENCE_NOT_FOUND"
        )
        assert error["details"]["field"] == "backend_id"
    assert admin.get(url).json() == _module(backend.id)


def test_edges_of_other_accounts_are_not_found(admin, other, factory, edge, backend):
    admin.put(_url(edge.id), json={"backend_id": backend.id})
    theirs = factory.row(TunnelGroupBackend, other.creds.account_id)
    url = _url(edge.id)
    assert_error(other.get(url), 404, "ERR_NOT_FOUND")
    assert_error(other.put(url, json={"backend_id": theirs.id}), 404, "ERR_NOT_FOUND")
    assert_error(other.delete(url), 404, "ERR_NOT_FOUND")
    assert admin.get(url).json() == _module(backend.id)


def test_unknown_edge_is_not_found(admin, backend):
    url = _url("edgtls_2pQcK8sTu9vWxY0zAb1Cd2Ef3Gh")
    assert_error(admin.get(url), 404, "ERR_NOT_FOUND")
    assert_error(admin.put(url, json={"backend_id": backend.id}), 404, "ERR_NOT_FOUND")
    assert_error(admin.delete(url), 404, "ERR_NOT_FOUND")


def test_an_edge_of_another_kind_is_not_found(admin, factory, backend):
    # Only reachable with inconsistent fixture data: an `edgtls_` id on a non-TLS edge row.
    odd = factory.row(Edge, admin.creds.account_id, id=ids.new_id("edgtls"), kind="https")
    assert_error(admin.get(_url(odd.id)), 404, "ERR_NOT_FOUND")
    assert_error(admin.put(_url(odd.id), json={"backend_id": backend.id}), 404, "ERR_NOT_FOUND")


@pytest.mark.parametrize(
    "edge_id",
    ["edghts_2pQcK8sTu9vWxY0zAb1Cd2Ef3Gh", "edgtls_short", "edgtls_2pQcK8sTu9vWxY0zAb1Cd2Ef3G!"],
)
def test_malformed_edge_ids_are_invalid(admin, factory, backend, edge_id):
    factory.row(Edge, admin.creds.account_id, id=ids.new_id("edghts"), kind="https")
    url = _url(edge_id)
    for response in (
        admin.get(url),
        admin.put(url, json={"backend_id": backend.id}),
        admin.delete(url),
    ):
        assert assert_error(response, 400, "ERR_INVALID_PARAMETER")["details"]["param"] == "id"


def test_an_https_edge_id_is_invalid_here(admin, factory, backend):
    https = factory.row(Edge, admin.creds.account_id, id=ids.new_id("edghts"), kind="https")
    response = admin.put(_url(https.id), json={"backend_id": backend.id})
    assert_error(response, 400, "ERR_INVALID_PARAMETER")


@pytest.mark.parametrize(
    ("body", "code", "field"),
    [
        ({}, "ERR_MISSING_FIELD", "backend_id"),
        ({"enabled": True}, "ERR_MISSING_FIELD", "backend_id"),
        ({"backend_id": None}, "ERR_WRONG_TYPE", "backend_id"),
        ({"backend_id": "bkdhr_2pQcK8sTu9vWxY0zAb1Cd2Ef3Gh"}, "ERR_INVALID_FIELD", "backend_id"),
        ({"backend_id": UNKNOWN_BACKEND, "enabled": "yes"}, "ERR_WRONG_TYPE", "enabled"),
        ({"backend_id": UNKNOWN_BACKEND, "backend": {}}, "ERR_UNKNOWN_FIELD", "backend"),
        ({"backend_id": UNKNOWN_BACKEND, "description": "x"}, "ERR_UNKNOWN_FIELD", "description"),
    ],
)
def test_invalid_bodies(admin, edge, body, code, field):
    error = assert_error(admin.put(_url(edge.id), json=body), 400, code)
    assert error["details"]["field"] == field
    assert_error(admin.get(_url(edge.id)), 404, "ERR_BACKEND_MODULE_NOT_SET")


def test_the_body_is_required(admin, edge):
    assert_error(admin.put(_url(edge.id)), 400, "ERR_INVALID_BODY")
