"""Request validation pieces used by tunnelgw.http.pipeline: a strict JSON parser, catalog error
codes, and byte limits declared in the spec.

- JSON: UTF-8 only, no duplicate keys, no NaN/Infinity, no NUL characters or lone surrogates
  in strings (PostgreSQL cannot store them), bounded nesting.
- Schema errors map to catalog codes with `details.field` / `details.param`.
- `x-max-bytes: N` on a string property limits its UTF-8 length (the API document's limits
  are in bytes; JSON Schema's `maxLength` counts characters).
- Validators are compiled once per schema (tunnelgw.http.pipeline uses jsonschema-rs on the spec's
  schemas converted from OpenAPI 3.0 `nullable` to plain JSON Schema; Python jsonschema
  only explains an invalid body).
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any

import jsonschema_rs
from connexion.exceptions import NonConformingResponseBody
from connexion.json_schema import Draft4RequestValidator
from jsonschema import Draft4Validator
from jsonschema.exceptions import ValidationError

from tunnelgw.core.errors import ApiError, Code

MAX_DEPTH = 32

_compiled: dict[int, tuple[dict[str, Any], Any]] = {}


def _validator_for(schema: dict[str, Any]) -> Any:
    entry = _compiled.get(id(schema))
    if entry is None or entry[0] is not schema:
        entry = (
            schema,
            Draft4RequestValidator(schema, format_checker=Draft4Validator.FORMAT_CHECKER),
        )
        _compiled[id(schema)] = entry
    return entry[1]


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
    _check_values(value)
    return value


def _check_values(value: Any) -> None:
    """Reject NUL characters, lone surrogates and nesting deeper than MAX_DEPTH."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise ApiError(Code.INVALID_JSON, f"JSON nesting deeper than {MAX_DEPTH} levels.")
        if isinstance(item, str):
            _check_string(item)
        elif isinstance(item, dict):
            for key, child in item.items():
                _check_string(key)
                stack.append((child, depth + 1))
        elif isinstance(item, list):
            stack.extend((child, depth + 1) for child in item)


def _check_string(text: str) -> None:
    if "\x00" in text:
        raise ApiError(Code.INVALID_JSON, "Strings must not contain NUL (\\u0000).")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ApiError(Code.INVALID_JSON, "Strings must not contain lone surrogates.") from None


def _field(error: ValidationError) -> str:
    return ".".join(str(part) for part in error.absolute_path)


def schema_error(error: ValidationError) -> ApiError:
    """The catalog error for one JSON Schema validation error of a request body."""
    field = _field(error)
    instance: Any = error.instance
    kind = error.validator
    schema: Any = error.schema
    if kind == "anyOf" and error.context and not error.absolute_path:
        # A body that fits none of its alternative forms: report the form it went furthest
        # into (the deepest error; the first form on a tie), e.g. the backend missing inside
        # the `module` it sent rather than the flat field it did not send.
        return schema_error(
            max(
                error.context, key=lambda e: (len(e.absolute_path), -int(e.relative_schema_path[0]))
            )
        )
    if kind == "required":
        required: Any = error.validator_value
        missing = next((name for name in required if name not in instance), str(error.message))
        name = f"{field}.{missing}" if field else str(missing)
        return ApiError(Code.MISSING_FIELD, f"{name} is required.", field=name)
    if kind == "additionalProperties" and isinstance(instance, dict):
        known = set(schema.get("properties", {}))
        extra = sorted(set(instance) - known)
        name = ".".join(filter(None, [field, extra[0] if extra else ""]))
        return ApiError(Code.UNKNOWN_FIELD, f"Unknown field {name!r}.", field=name)
    exclusive: Any = error.validator_value
    if kind == "not" and isinstance(exclusive, dict) and len(exclusive.get("required", ())) > 1:
        # `not: {required: [a, b]}`: fields that exclude each other (the spec describes it).
        names = [f"{field}.{n}" if field else n for n in exclusive["required"]]
        return ApiError(
            Code.CONFLICTING_FIELDS,
            f"{' and '.join(names)} exclude each other; send one of them.",
            field=names[-1],
        )
    if not field:
        return ApiError(
            Code.INVALID_BODY, f"The request body must be a JSON object: {error.message}"
        )
    if kind == "type":
        return ApiError(Code.WRONG_TYPE, f"{field}: {error.message}.", field=field)
    if kind in ("maxLength", "maxItems", "maxProperties"):
        return ApiError(Code.FIELD_TOO_LONG, f"{field}: {error.message}.", field=field)
    return ApiError(Code.INVALID_FIELD, f"{field}: {error.message}.", field=field)


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


def request_validator(schema: dict[str, Any]) -> Any:
    """The Python jsonschema validator of a request body schema (made once per schema), for
    the most helpful error of an invalid body."""
    return _validator_for(schema)


def nonconforming(detail: str) -> NonConformingResponseBody:
    """The error of a handler result that does not match its response schema (a bug: 500)."""
    return NonConformingResponseBody(detail=f"Response body does not conform to the spec {detail}")


class Compiled:
    """The jsonschema-rs validator of an OpenAPI schema, compiled at its first use (start-up
    stays short, and operations nobody calls cost no memory); then reused."""

    __slots__ = ("_validator", "formats", "schema")

    def __init__(self, schema: dict[str, Any], *, formats: bool) -> None:
        self.schema = schema
        self.formats = formats
        self._validator: Any = None

    def get(self) -> Any:
        validator = self._validator
        if validator is None:
            validator = self._validator = jsonschema_rs.Draft4Validator(
                to_json_schema(self.schema), validate_formats=self.formats
            )
        return validator
