"""Schemathesis hooks: teach the generator the two constraints the spec declares as
extensions because OpenAPI 3.0 cannot express them (`x-max-bytes`, `x-key-pattern`).

A positive (valid-by-schema) case that breaks one of them is not valid input; it is dropped,
not sent. Negative cases are left alone, so the server's rejection of such bodies is still
tested.
"""

from __future__ import annotations

from typing import Any

import schemathesis

from tunnelgw.errors import ApiError
from tunnelgw.validation import check_extensions


def _resolve(node: Any, root: dict[str, Any]) -> Any:
    if isinstance(node, dict) and "$ref" in node:
        target: Any = root
        for part in node["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        return _resolve(target, root)
    return node


def _body_schema(case: Any) -> dict[str, Any] | None:
    root = case.operation.schema.raw_schema
    body = case.operation.definition.raw.get("requestBody")
    if not body:
        return None
    schema = _resolve(body["content"]["application/json"]["schema"], root)
    props = {name: _resolve(prop, root) for name, prop in schema.get("properties", {}).items()}
    return {**schema, "properties": props}


@schemathesis.hook
def filter_case(context: Any, case: Any) -> bool:
    meta = case.meta
    if meta is None or not meta.generation.mode.is_positive or not isinstance(case.body, dict):
        return True
    schema = _body_schema(case)
    if schema is None:
        return True
    try:
        check_extensions(schema, case.body)
    except ApiError:
        return False
    return True
