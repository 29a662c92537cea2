"""The contract itself: a valid OpenAPI document whose every operation has a handler, and an
independent validator that really rejects a non-conforming response."""

from __future__ import annotations

import importlib
from pathlib import Path

import httpx
import pytest
import yaml
from openapi_spec_validator import validate

from tests.openapi_check import SpecValidator

SPEC = yaml.safe_load((Path(__file__).resolve().parents[2] / "openapi.yaml").read_text())
OPERATIONS = [
    (path, method, op)
    for path, item in SPEC["paths"].items()
    for method, op in item.items()
    if method != "parameters"
]


def test_spec_is_valid_openapi():
    validate(SPEC)


@pytest.mark.parametrize(("path", "method", "op"), OPERATIONS, ids=lambda v: str(v)[:40])
def test_operation_resolves_to_a_handler(path, method, op):
    module, _, verb = op["operationId"].rpartition(".")
    handler = getattr(importlib.import_module(f"handlers.{module}"), verb)
    assert callable(handler), (path, method)


def test_every_create_links_to_get_update_delete():
    for path, method, op in OPERATIONS:
        if method == "post":
            links = op["responses"]["201"]["links"]
            verbs = {link["operationId"].rpartition(".")[2] for link in links.values()}
            # Other operations on the new resource (e.g. the reserved-domain detaches) may
            # be linked too, so stateful testing reaches them with real ids.
            assert verbs >= {"get", "update", "delete"}, path


def test_validator_rejects_a_nonconforming_response():
    validator = SpecValidator()
    request = httpx.Request(
        "GET", "http://testserver/api_keys/ak_x", headers={"Service-Version": "2"}
    )
    bad = httpx.Response(200, json={"id": "ak_x"}, request=request)
    with pytest.raises(Exception, match=r"(?i)valid|required|pattern"):
        validator.check(bad)
    undocumented = httpx.Response(418, json={}, request=request)
    with pytest.raises(Exception, match="418"):
        validator.check(undocumented)
    bad_error = httpx.Response(
        404, json={"error": "x"}, request=httpx.Request("GET", "http://testserver/nowhere")
    )
    with pytest.raises(Exception, match="required"):
        validator.check(bad_error)


@pytest.mark.parametrize(("path", "method", "op"), OPERATIONS, ids=lambda v: str(v)[:40])
def test_every_operation_documents_the_shared_error_statuses(path, method, op):
    statuses = set(op["responses"])
    assert "413" in statuses  # any request can carry an oversize body
    if op.get("security") != []:
        assert {"400", "401"} <= statuses  # version header, credentials
    if "{id}" in path:
        assert "404" in statuses
    if "requestBody" in op:
        assert "415" in statuses
