"""The contract itself: a valid OpenAPI document whose every operation has a handler, and an
independent validator that really rejects a non-conforming response."""

from __future__ import annotations

import importlib
import re

import httpx
import orjson
import pytest
import yaml
from openapi_spec_validator import validate

from tests.openapi_check import SPEC_PATH, SpecValidator

# Parsed here on its own (libyaml), not through the app's loader these tests check.
SPEC = yaml.load(SPEC_PATH.read_text(), Loader=yaml.CSafeLoader)
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
    handler = getattr(importlib.import_module(f"tunnelgw.handlers.{module}"), verb)
    assert callable(handler), (path, method)


def test_every_create_links_to_get_update_delete():
    for path, method, op in OPERATIONS:
        # The admin API's fault rules are cleared together, not one by one; a command on a
        # resource (a POST answered 204, e.g. a tunnel session's stop) creates nothing.
        if method == "post" and "201" in op["responses"] and "admin" not in op["tags"]:
            links = op["responses"]["201"]["links"]
            verbs = {link["operationId"].rpartition(".")[2] for link in links.values()}
            # Other operations on the new resource (e.g. the reserved-domain detaches) may
            # be linked too, so stateful testing reaches them with real ids. A kind that
            # cannot change or go (abuse reports) links only what its item path serves.
            item = SPEC["paths"].get(f"{path}/{{id}}", {"get": 0, "patch": 0, "delete": 0})
            served = {"get": "get", "patch": "update", "delete": "delete"}
            assert verbs >= {verb for method, verb in served.items() if method in item}, path


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


def test_connexion_accepts_the_spec():
    """The app skips Connexion's spec check at start-up (tunnelgw.http.workarounds.shipped_spec);
    here it runs, on the spec as the app serves it."""
    from connexion.exceptions import InvalidSpecification
    from connexion.spec import OpenAPISpecification

    from tunnelgw.core.settings import Settings
    from tunnelgw.core.spec import load as load_spec
    from tunnelgw.http.app import apply_settings

    OpenAPISpecification._validate_spec(apply_settings(load_spec(), Settings()))
    # The check is really on (the app's start-up put it back).
    with pytest.raises(InvalidSpecification):
        OpenAPISpecification._validate_spec({"openapi": "3.0.3", "info": 1, "paths": {}})


def test_every_validator_of_every_operation_compiles(tmp_path):
    """Validators compile on first use; compile them all here so none fails in production.
    An in-process app of its own (the suite's `http` may be a live server)."""
    from starlette.testclient import TestClient

    from tunnelgw.core.settings import Settings
    from tunnelgw.http.app import create_app
    from tunnelgw.http.pipeline.operation import OperationMiddleware
    from tunnelgw.http.validation import Compiled
    from tunnelgw.migrations import migrate

    settings = Settings(data_dir=tmp_path, admin_api=True)  # every operation served
    migrate.upgrade(settings.resolved_database_url())
    app = create_app(settings)
    with TestClient(app) as client:
        assert client.get("/healthz").status_code == 200
    stack = app.middleware.middleware_stack
    pipeline = next(m for m in stack if isinstance(m, OperationMiddleware))
    apis = [api for apis in pipeline.apis.values() for api in apis]
    for api in apis:
        api.operations.build_all()  # each is built at its first request otherwise
    operations = [op for api in apis for op in api.operations.values()]
    assert len(operations) == len(OPERATIONS)
    compiled = 0
    for operation in operations:
        found: list[Compiled | None] = [p.validator for p in operation.parameters.params.values()]
        found += [operation.body.fast] if operation.body else []
        found += list(operation.responses.validators.values()) if operation.responses else []
        for item in found:
            if item is not None:
                item.get()
                compiled += 1
    assert compiled > 2 * len(OPERATIONS)


@pytest.fixture
def spec_copy(tmp_path, monkeypatch):
    """The app's spec loading pointed at a copy of openapi.yaml in `tmp_path`."""
    from tunnelgw.core import spec as app

    spec_file = tmp_path / "openapi.yaml"
    spec_file.write_bytes(app.SPEC_FILE.read_bytes())
    monkeypatch.setattr(app, "SPEC_DIR", tmp_path)
    monkeypatch.setattr(app, "SPEC_FILE", spec_file)
    monkeypatch.setattr("sys.dont_write_bytecode", False)
    app._parsed_spec.cache_clear()
    yield spec_file
    app._parsed_spec.cache_clear()


def test_the_parsed_spec_is_kept_and_equals_the_yaml(spec_copy, monkeypatch):
    from tunnelgw.core import spec as app

    assert app.load() == SPEC
    [kept] = (spec_copy.parent / "__pycache__").glob("openapi.*.json")
    app._parsed_spec.cache_clear()  # a new process: the kept parse serves it, not the YAML
    monkeypatch.setattr(app.yaml, "load", lambda *_a, **_k: pytest.fail("parsed again"))
    assert app.load() == SPEC
    first, second = app.load(), app.load()
    first["info"]["title"] = "changed"  # each caller gets its own copy
    assert second["info"]["title"] == SPEC["info"]["title"]
    assert kept.exists()


def test_a_changed_spec_is_parsed_again(spec_copy):
    from tunnelgw.core import spec as app

    app.load()
    spec_copy.write_text(spec_copy.read_text().replace(SPEC["info"]["title"], "Renamed", 1))
    app._parsed_spec.cache_clear()
    assert app.load()["info"]["title"] == "Renamed"
    assert len(list((spec_copy.parent / "__pycache__").glob("openapi.*.json"))) == 2


def test_a_damaged_parse_is_parsed_again(spec_copy):
    from tunnelgw.core import spec as app

    app.load()
    [kept] = (spec_copy.parent / "__pycache__").glob("openapi.*.json")
    kept.write_bytes(b'{"openapi": ')
    app._parsed_spec.cache_clear()
    assert app.load() == SPEC


def test_nothing_is_written_without_bytecode_writing(spec_copy, monkeypatch):
    from tunnelgw.core import spec as app

    monkeypatch.setattr("sys.dont_write_bytecode", True)
    assert app.load() == SPEC
    assert not (spec_copy.parent / "__pycache__").exists()


# The limits of free text on every resource that has it (the API document's section 8, which
# the platform applies to every resource): tunnelgw.http.validation enforces `x-max-bytes` on
# the top-level properties of a request body.
TEXT_LIMITS = {"description": 255, "metadata": 4096}


def _resolve(node):
    while isinstance(node, dict) and "$ref" in node:
        node = SPEC["components"]["schemas"][node["$ref"].rpartition("/")[2]]
    return node


def _named_properties(node, depth=0, seen=None):
    """(depth, name, property schema) of every property of `node` and the schemas within it
    (objects, items, alternatives), depth 0 being the body's own properties."""
    seen = set() if seen is None else seen
    node = _resolve(node)
    if not isinstance(node, dict) or id(node) in seen:
        return
    seen.add(id(node))
    for name, prop in node.get("properties", {}).items():
        yield depth, name, _resolve(prop)
        yield from _named_properties(prop, depth + 1, seen)
    for key in ("anyOf", "oneOf", "allOf"):
        for alternative in node.get(key, []):
            yield from _named_properties(alternative, depth, seen)
    for key in ("items", "additionalProperties", "not"):
        if isinstance(node.get(key), dict):
            yield from _named_properties(node[key], depth + 1, seen)


def _request_bodies():
    for path, method, op in OPERATIONS:
        content = op.get("requestBody", {}).get("content", {})
        if "application/json" in content:
            yield f"{method} {path}", content["application/json"]["schema"]


def test_every_description_and_metadata_a_client_sends_carries_its_byte_limit():
    """The next resource cannot forget the limits: every request body's `description` and
    `metadata` are top-level strings with `x-max-bytes` 255 and 4096 (and maxLength, which
    tools without our extension read)."""
    described = 0
    for where, schema in _request_bodies():
        for depth, name, prop in _named_properties(schema):
            if name not in TEXT_LIMITS or prop.get("type") != "string":
                continue
            described += 1
            assert depth == 0, f"{where}: {name} is nested; x-max-bytes is enforced on top level"
            assert prop.get("x-max-bytes") == TEXT_LIMITS[name], (where, name)
            assert prop.get("maxLength") == TEXT_LIMITS[name], (where, name)
    assert described >= 48  # 12 resources, create and update each, description and metadata


# The families the platform retired on 2025-12-31 (edges, edge routes and modules, backends:
# /work/shared/docs/platform-surface.md), by the tags of the operations this server keeps.
SUNSET_TAGS = {
    "http_response_backends",
    "tunnel_group_backends",
    "tls_edges",
    "tls_edge_backend",
    "https_edges",
    "https_edge_routes",
    "tcp_edges",
}


@pytest.mark.parametrize(("path", "method", "op"), OPERATIONS, ids=lambda v: str(v)[:40])
def test_sunset_operations_are_deprecated_and_say_so(path, method, op):
    sunset = bool(SUNSET_TAGS & set(op["tags"]))
    # The one other deprecation: the platform deprecates /bot_users for /service_users.
    renamed = path.startswith("/bot_users")
    assert op.get("deprecated", False) is (sunset or renamed), (method, path)
    if renamed:
        assert op["description"].startswith("**Deprecated.**"), (method, path)
        assert "/service_users" in op["description"]
    if sunset:
        assert op["description"].startswith("**Sunset.**"), (method, path)
        assert "2025-12-31" in op["description"]
        # The line names the replacement.
        assert "cloud endpoints with traffic policy" in op["description"], (method, path)
    assert path.startswith(("/backends/", "/edges/")) is sunset, (method, path)


def test_every_operation_has_a_summary_and_a_description():
    """Spectral's `operation-description` in the lint run too; here without Node.js."""
    missing = [
        (m, p) for p, m, op in OPERATIONS if not (op.get("summary") and op.get("description"))
    ]
    assert missing == []


def test_every_nullable_enum_lists_null():
    """A nullable schema with an enum admits null only when the enum lists it (OpenAPI
    3.0.3); without it, validators and contract testers refuse the null the server takes."""
    found: list[str] = []

    def walk(node: object, path: str) -> None:
        if isinstance(node, dict):
            if node.get("nullable") and "enum" in node and None not in node["enum"]:
                found.append(path)
            for key, value in node.items():
                walk(value, f"{path}/{key}")
        elif isinstance(node, list):
            for index, value in enumerate(node):
                walk(value, f"{path}/{index}")

    walk(SPEC, "")
    assert found == []


def test_nullable_object_schemas_carry_their_name_as_title():
    """A code generator names the model of a nullable object schema from its `title` (else
    it makes an anonymous `...Type0`); tests/codegen checks the generated names, but runs
    only in its own tox environment, so the rule is checked here too."""
    untitled = [
        name
        for name, schema in SPEC["components"]["schemas"].items()
        if schema.get("nullable") and "properties" in schema and schema.get("title") != name
    ]
    assert untitled == []


SECRET_NAME = re.compile(r"private_key(_pem)?$|secret|^api_key$|token$|password|passphrase")


def test_every_secret_a_client_sends_is_marked():
    """The request journal redacts the fields marked `x-secret` or `writeOnly`
    (tunnelgw.services.journal): every request body field named like a secret is marked, and
    so is a vault secret's value."""
    marked = set()
    for where, schema in _request_bodies():
        for _depth, name, prop in _named_properties(schema):
            secret = SECRET_NAME.search(name) and prop.get("type") == "string"
            if secret or (name == "value" and "/vault_secrets" in where):
                assert prop.get("x-secret") or prop.get("writeOnly"), (where, name)
                marked.add(name)
    assert marked >= {
        "private_key_pem",
        "aws_secret_access_key",
        "api_key",
        "client_secret",
        "authtoken",
        "value",
    }


def test_secret_paths_and_redaction():
    from tunnelgw.services import journal

    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "key": {"type": "string", "x-secret": True},
            "list": {"type": "array", "items": {"properties": {"pw": {"writeOnly": True}}}},
            "map": {"additionalProperties": {"type": "string", "x-secret": True}},
            "either": {"anyOf": [{"properties": {"token": {"x-secret": True}}}, {"type": "null"}]},
        },
    }
    paths = journal.secret_paths(schema)
    assert paths == {("key",), ("list", "*", "pw"), ("map", "*"), ("either", "token")}
    body = {
        "name": "n",
        "key": "k",
        "list": [{"pw": "p"}, {"other": 1}, "x"],
        "map": {"a": "1", "b": None},
        "either": None,
    }
    assert journal.redact(body, paths) == {
        "name": "n",
        "key": "<redacted>",
        "list": [{"pw": "<redacted>"}, {"other": 1}, "x"],
        "map": {"a": "<redacted>", "b": None},
        "either": None,
    }
    assert body["key"] == "k"  # the body itself is left as it was
    assert journal.redact([1, 2], paths) == [1, 2]
    assert journal.body_of(b"", paths) is None
    assert journal.body_of(b"{nope", paths) is None
    assert journal.body_of(b'{"key": "k"}', paths) == {"key": "<redacted>"}
    assert journal.body_of(b" " * (journal.MAX_BODY_BYTES + 1), paths) is None
    assert journal.secret_paths(None) == frozenset()
    # A private key in a field not meant for one (refused there) is redacted all the same.
    pem = "-----BEGIN EC PRIVATE KEY-----\nMHc...\n-----END EC PRIVATE KEY-----\n"
    sent = orjson.dumps({"ca_pem": pem, "list": [pem, 1], "name": "n"})
    assert journal.body_of(sent, paths) == {
        "ca_pem": "<redacted>",
        "list": ["<redacted>", 1],
        "name": "n",
    }
