"""Request validation pieces used by tunnelgw.http.pipeline: a strict JSON parser, catalog error
codes, and byte limits declared in the spec.

- JSON: UTF-8 only, no duplicate keys, no NaN/Infinity, no NUL characters or lone surrogates
  in strings (PostgreSQL cannot store them), bounded nesting.
- Schema errors map to catalog codes with `details.field` / `details.param`.
- `x-max-bytes: N` on a string property limits its UTF-8 length (the API document's limits
  are in bytes; JSON Schema's `maxLength` counts characters).
- Validators are compiled once per schema (tunnelgw.http.pipeline uses jsonschema-rs on the spec's
  schemas converted from OpenAPI 3.0 `nullable` to plain JSON Schema; tunnelgw.http.explain
  names the first problem of an invalid body).
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any

import jsonschema_rs
from connexion.exceptions import NonConformingResponseBody

from tunnelgw.core.errors import ApiError, Code

MAX_DEPTH = 32
# An escape that can make a NUL or a lone surrogate (raw ones are invalid UTF-8 or invalid
# JSON): bodies without one skip the string checks.
_RISKY_ESCAPE = re.compile(r"\\u(?:0000|[dD][89abcdefABCDEF])")


def _reject_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):
        seen: set[str] = set()
        dup = next(k for k, _ in pairs if k in seen or seen.add(k))  # type: ignore[func-returns-value]
        raise ApiError(Code.INVALID_JSON, f"Duplicate key {dup!r} in a JSON object.")
    return result


def _reject_constant(name: str) -> None:
    raise ApiError(Code.INVALID_JSON, f"{name} is not a JSON number.")


def loads_strict(raw: bytes) -> Any:
    """Parse a request body; ApiError(ERR_INVALID_JSON) for anything but clean JSON."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ApiError(Code.INVALID_JSON, f"The body is not UTF-8 (byte {exc.start}).") from None
    try:
        value = json.loads(
            text, object_pairs_hook=_reject_duplicates, parse_constant=_reject_constant
        )
    except RecursionError:
        raise ApiError(Code.INVALID_JSON, "The JSON document is nested too deeply.") from None
    except json.JSONDecodeError as exc:
        raise ApiError(
            Code.INVALID_JSON, f"{exc.msg} at line {exc.lineno} column {exc.colno}."
        ) from None
    except ValueError:  # e.g. an integer literal longer than Python's 4300-digit limit
        raise ApiError(Code.INVALID_JSON, "A JSON number is too large.") from None
    _check_values(value, strings=_RISKY_ESCAPE.search(text) is not None)
    return value


def _check_values(value: Any, *, strings: bool) -> None:
    """Reject nesting deeper than MAX_DEPTH and, when `strings`, NUL characters and lone
    surrogates. Only containers are walked: a long array of numbers costs one pass."""
    if strings and isinstance(value, str):
        _check_string(value)
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if not isinstance(item, dict | list) or not item:
            continue
        if depth >= MAX_DEPTH:
            raise ApiError(Code.INVALID_JSON, f"JSON nesting deeper than {MAX_DEPTH} levels.")
        if isinstance(item, dict):
            if strings:
                for key in item:
                    _check_string(key)
            children: Any = item.values()
        else:
            children = item
        for child in children:
            if isinstance(child, dict | list):
                stack.append((child, depth + 1))
            elif strings and isinstance(child, str):
                _check_string(child)


def _check_string(text: str) -> None:
    if "\x00" in text:
        raise ApiError(Code.INVALID_JSON, "Strings must not contain NUL (\\u0000).")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ApiError(Code.INVALID_JSON, "Strings must not contain lone surrogates.") from None


def check_extensions(schema: dict[str, Any], body: Any) -> None:
    """Enforce our schema extensions on the body's top-level properties.

    `x-max-bytes: N` limits a string's UTF-8 length; `x-key-pattern: RE` is a pattern every
    key of an object (map) must match. OpenAPI 3.0 can express neither.
    """
    if not isinstance(body, dict):
        return
    for name, prop in schema.get("properties", {}).items():
        value = body.get(name)
        limit = prop.get("x-max-bytes")
        if limit is not None and isinstance(value, str):
            size = len(value.encode("utf-8"))
            if size > limit:
                raise ApiError(
                    Code.FIELD_TOO_LONG,
                    f"{name} is {size} bytes in UTF-8; the limit is {limit} bytes.",
                    context={"limit": str(limit), "length": str(size)},
                    field=name,
                )
        key_pattern = prop.get("x-key-pattern")
        if key_pattern is not None and isinstance(value, dict):
            for key in value:
                if not _pattern(key_pattern).fullmatch(key):
                    raise ApiError(
                        Code.INVALID_FIELD,
                        f"{name}: {key[:64]!r} is not a valid name (must match {key_pattern}).",
                        field=f"{name}.{key[:64]}",
                    )


@functools.cache
def _pattern(regex: str) -> re.Pattern[str]:
    return re.compile(regex)


# OpenAPI-only keywords, dropped when a schema becomes plain JSON Schema.
_OAS_ONLY = {
    "nullable",
    "example",
    "discriminator",
    "readOnly",
    "writeOnly",
    "xml",
    "externalDocs",
    "deprecated",
    "components",  # Connexion attaches the components to operation schemas (already resolved)
}
_SCHEMA_MAPS = {"properties", "patternProperties", "definitions"}


def to_json_schema(node: Any) -> Any:
    """An OpenAPI 3.0 schema as JSON Schema draft 4: `nullable` adds null to `type`/`enum`;
    OpenAPI-only keywords and `x-` extensions go (property names are kept as they are)."""
    if isinstance(node, list):
        return [to_json_schema(item) for item in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _OAS_ONLY or key.startswith("x-"):
            continue
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            out[key] = {name: to_json_schema(sub) for name, sub in value.items()}
        else:
            out[key] = to_json_schema(value)
    if node.get("nullable"):
        if isinstance(out.get("type"), str):
            out["type"] = [out["type"], "null"]
        if "enum" in out and None not in out["enum"]:
            out["enum"] = [*out["enum"], None]
    return out


def nonconforming(detail: str) -> NonConformingResponseBody:
    """The error of a handler result that does not match its response schema (a bug: 500)."""
    return NonConformingResponseBody(detail=f"Response body does not conform to the spec {detail}")


class Compiled:
    """The jsonschema-rs validator of an OpenAPI schema, compiled at its first use (start-up
    stays short, and operations nobody calls cost no memory); then reused."""

    __slots__ = ("_json_schema", "_validator", "formats", "schema")

    def __init__(self, schema: dict[str, Any], *, formats: bool) -> None:
        self.schema = schema
        self.formats = formats
        self._validator: Any = None
        self._json_schema: dict[str, Any] | None = None

    def json_schema(self) -> dict[str, Any]:
        """The schema as plain JSON Schema (tunnelgw.http.explain reads it)."""
        if self._json_schema is None:
            self._json_schema = to_json_schema(self.schema)
        return self._json_schema

    def get(self) -> Any:
        validator = self._validator
        if validator is None:
            validator = self._validator = jsonschema_rs.Draft4Validator(
                self.json_schema(), validate_formats=self.formats
            )
        return validator
