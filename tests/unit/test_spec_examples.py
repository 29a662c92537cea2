"""Issue 19: every operation shows a response example, and every example in openapi.yaml
(responses, request bodies, parameters, schemas) validates against its schema, with the spec's
own components (OpenAPI 3.0 semantics: nullable, readOnly/writeOnly, formats)."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest
from openapi_schema_validator import (
    OAS30ReadValidator,
    OAS30Validator,
    OAS30WriteValidator,
    oas30_format_checker,
)

from tunnelgw.core.spec import load as load_spec

SPEC = load_spec()
OPERATIONS = [
    (path, method, op)
    for path, item in SPEC["paths"].items()
    for method, op in item.items()
    if method != "parameters"
]
# Where a schema object holds other schema objects.
_SUBSCHEMA_MAPS = ("properties",)
_SUBSCHEMAS = ("items", "additionalProperties", "not")
_SUBSCHEMA_LISTS = ("allOf", "anyOf", "oneOf")


def resolve(spec: dict[str, Any], node: Any) -> Any:
    """`node`, following `$ref`s within `spec`."""
    while isinstance(node, dict) and "$ref" in node:
        target: Any = spec
        for part in node["$ref"].removeprefix("#/").split("/"):
            target = target[part.replace("~1", "/").replace("~0", "~")]
        node = target
    return node


def _examples(spec: dict[str, Any], holder: dict[str, Any]) -> list[Any]:
    """The `example` and `examples` values of a media type or parameter object."""
    found = [holder["example"]] if "example" in holder else []
    found += [resolve(spec, ex)["value"] for ex in holder.get("examples", {}).values()]
    return found


def _errors(spec: dict[str, Any], schema: Any, value: Any, validator: Any) -> list[str]:
    """Why `value` does not validate against `schema` (whose `$ref`s point into `spec`)."""
    root = {"components": spec.get("components", {}), "x-target": schema, "$ref": "#/x-target"}
    checker = validator(root, format_checker=oas30_format_checker)
    return [
        f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in checker.iter_errors(value)
    ]


def _schema_examples(node: Any, where: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every schema object under `node` that carries an `example`, with where it is."""
    if not isinstance(node, dict):
        return
    if "example" in node:
        yield where, node
    for key in _SUBSCHEMA_MAPS:
        for name, sub in node.get(key, {}).items():
            yield from _schema_examples(sub, f"{where}/{key}/{name}")
    for key in _SUBSCHEMAS:
        yield from _schema_examples(node.get(key), f"{where}/{key}")
    for key in _SUBSCHEMA_LISTS:
        for n, sub in enumerate(node.get(key, ())):
            yield from _schema_examples(sub, f"{where}/{key}/{n}")


def operation_example_problems(spec: dict[str, Any]) -> list[str]:
    """What is wrong with the examples of `spec`'s operations: an operation with no response
    example, a success response with a body but no example, an example that does not
    validate (responses as read, request bodies and parameters as written)."""
    problems = []
    for path, item in spec["paths"].items():
        for method, op in item.items():
            if method == "parameters":
                continue
            where = f"{method.upper()} {path}"
            shown = 0
            for status, response in op["responses"].items():
                for media_type, media in resolve(spec, response).get("content", {}).items():
                    examples = _examples(spec, media)
                    shown += len(examples)
                    if not examples and status.startswith("2"):
                        problems.append(f"{where} {status} {media_type}: no example")
                    for example in examples:
                        problems += [
                            f"{where} {status}: {error}"
                            for error in _errors(spec, media["schema"], example, OAS30ReadValidator)
                        ]
            if not shown:
                problems.append(f"{where}: no response example")
            body = resolve(spec, op.get("requestBody", {}))
            for media in body.get("content", {}).values():
                for example in _examples(spec, media):
                    problems += [
                        f"{where} body: {error}"
                        for error in _errors(spec, media["schema"], example, OAS30WriteValidator)
                    ]
            for parameter in [*item.get("parameters", ()), *op.get("parameters", ())]:
                parameter = resolve(spec, parameter)
                for example in _examples(spec, parameter):
                    problems += [
                        f"{where} {parameter['name']}: {error}"
                        for error in _errors(spec, parameter["schema"], example, OAS30Validator)
                    ]
    return problems


def schema_example_problems(spec: dict[str, Any]) -> list[str]:
    """Schema-level `example`s of `spec`'s components that do not validate."""
    problems = []
    for name, schema in spec["components"]["schemas"].items():
        for where, node in _schema_examples(schema, name):
            problems += [
                f"{where}: {error}"
                for error in _errors(spec, node, node["example"], OAS30Validator)
            ]
    return problems


@pytest.mark.parametrize(("path", "method", "op"), OPERATIONS, ids=lambda v: str(v)[:40])
def test_every_operation_shows_a_success_example(path, method, op):
    success = [status for status in op["responses"] if status.startswith("2")]
    assert success, (method, path)
    for status in success:
        content = resolve(SPEC, op["responses"][status]).get("content", {})
        for media in content.values():
            assert _examples(SPEC, media), (method, path, status)


def test_every_example_of_every_operation_validates():
    assert operation_example_problems(SPEC) == []


def test_every_schema_example_validates():
    assert schema_example_problems(SPEC) == []
    assert sum(1 for s in SPEC["components"]["schemas"].values() for _ in _schema_examples(s, ""))


def test_the_checks_catch_a_bad_or_missing_example():
    spec = copy.deepcopy(SPEC)
    get = spec["paths"]["/api_keys/{id}"]["get"]["responses"]["200"]["content"]["application/json"]
    example = get.get("example") or resolve(spec, next(iter(get["examples"].values())))["value"]
    example["created_at"] = 5  # a number where the schema says string
    del spec["paths"]["/api_keys"]["get"]["responses"]["200"]["content"]["application/json"][
        "example"
    ]
    problems = operation_example_problems(spec)
    assert any("GET /api_keys/{id} 200: created_at:" in p for p in problems), problems
    assert "GET /api_keys 200 application/json: no example" in problems
    schema = spec["components"]["schemas"]["ReservedDomainCreate"]["properties"]["domain"]
    schema["example"] = "not a hostname!"
    assert any(
        p.startswith("ReservedDomainCreate/properties/domain:")
        for p in schema_example_problems(spec)
    )
