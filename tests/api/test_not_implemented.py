"""Operations of the platform's API that this server does not serve answer 501
ERR_NOT_IMPLEMENTED naming the operation (tunnelgw.core.platform, docs/platform-coverage.md);
other unknown paths stay 404 and served paths' other methods 405."""

from __future__ import annotations

import pytest

from tests.factories import assert_error
from tunnelgw.core import platform, spec

UNSERVED = platform.unserved(spec.load())


def _concrete(template: str) -> str:
    return template.replace("{id}", "x1")


def test_a_retired_module_operation_is_501_and_names_it(admin):
    response = admin.put("/edges/https/edghts_2pQcN3uHk0xVnFj2ZqB4CSdIm6L/mutual_tls", json={})
    error = assert_error(response, 501, "ERR_NOT_IMPLEMENTED")
    assert error["details"]["operation"] == "PUT /edges/https/{id}/mutual_tls"
    assert error["details"]["family"] == "edge_modules/https_edge_mutual_tls"
    assert "PUT /edges/https/{id}/mutual_tls" in error["msg"]
    assert "cloud endpoints and traffic policy" in error["msg"]
    assert response.headers["Operation-Id"] == error["details"]["operation_id"]


def test_a_method_the_platform_has_on_a_served_path_stays_405_and_names_it(admin):
    """HTTP's 405 (the path exists; its other methods are served, see Allow), which contract
    tests expect of an undeclared method; the message and details name the operation."""
    response = admin.post("/edges/https", json={})
    error = assert_error(response, 405, "ERR_METHOD_NOT_ALLOWED")
    assert error["details"]["operation"] == "POST /edges/https"
    assert error["details"]["family"] == "edges/https"
    assert "POST /edges/https is an operation of the platform's API" in error["msg"]
    assert response.headers["Allow"] == "GET"


SERVED_PATHS = {platform.path_shape(path) for path in spec.load()["paths"]}


@pytest.mark.parametrize("op", UNSERVED, ids=lambda op: op.name)
def test_every_unserved_operation_is_501_or_405_and_named(admin, op):
    response = admin.request(op.method, _concrete(op.path), json={})
    if op.shape in SERVED_PATHS:
        error = assert_error(response, 405, "ERR_METHOD_NOT_ALLOWED")
    else:
        error = assert_error(response, 501, "ERR_NOT_IMPLEMENTED")
    assert (error["details"]["operation"], error["details"]["family"]) == (op.name, op.family)
    retired = "retired this family on 2025-12-31" in error["msg"]
    assert retired == (op.status == "retired")


def test_the_list_has_both_kinds_of_unserved_operation():
    """The parametrized walk above covers retired and current operations (while the current
    families are not all served)."""
    assert {op.status for op in UNSERVED} >= {"retired"}
    assert any(op.family.startswith("edge_modules/") for op in UNSERVED)


@pytest.mark.parametrize(
    ("method", "path", "status", "code"),
    [
        ("GET", "/no_such_family", 404, "ERR_ROUTE_NOT_FOUND"),
        ("GET", "/edges/https/x1/not_a_module", 404, "ERR_ROUTE_NOT_FOUND"),
        ("PUT", "/edges/https/x1/mutual_tls/extra", 404, "ERR_ROUTE_NOT_FOUND"),
        ("GET", "/edges/https//mutual_tls", 404, "ERR_ROUTE_NOT_FOUND"),
        ("POST", "/edges/https/x1/mutual_tls", 404, "ERR_ROUTE_NOT_FOUND"),
        ("PUT", "/api_keys", 405, "ERR_METHOD_NOT_ALLOWED"),
        (
            "DELETE",
            "/abuse_reports/abrp_2pQcN3uHk0xVnFj2ZqB4CSdIm6L",
            405,
            "ERR_METHOD_NOT_ALLOWED",
        ),
    ],
)
def test_paths_that_are_no_platform_operation_keep_404_and_405(admin, method, path, status, code):
    assert_error(admin.request(method, path, json={}), status, code)


def test_served_operations_answer_as_before(admin):
    assert admin.get("/edges/https").status_code == 200
    assert admin.get("/ssh_host_certificates").status_code == 200
