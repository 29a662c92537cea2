"""Request validation plugged into Connexion: a strict JSON parser, catalog error codes, and
byte limits declared in the spec.

- JSON: UTF-8 only, no duplicate keys, no NaN/Infinity, no NUL characters or lone surrogates
  in strings (PostgreSQL cannot store them), bounded nesting.
- Schema errors map to catalog codes with `details.field` / `details.param`.
- `x-max-bytes: N` on a string property limits its UTF-8 length (the API document's limits
  are in bytes; JSON Schema's `maxLength` counts characters).
- Validators are compiled once per schema, not once per request (Connexion builds new ones
  for every request); responses are checked with jsonschema-rs on the spec's schemas
  converted from OpenAPI 3.0 (`nullable`) to plain JSON Schema.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import AsyncGenerator
from typing import Any

import jsonschema_rs
import orjson
from connexion.datastructures import MediaTypeDict
from connexion.exceptions import NonConformingResponseBody
from connexion.json_schema import Draft4RequestValidator
from connexion.utils import is_null, is_nullable
from connexion.validators import (
    VALIDATOR_MAP,
    AbstractResponseBodyValidator,
    JSONRequestBodyValidator,
    ParameterValidator,
)
from jsonschema import Draft4Validator
from jsonschema.exceptions import ValidationError, best_match
from starlette.types import Scope

from tunnelgw.errors import ApiError, Code

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


class StrictJSONBodyValidator(JSONRequestBodyValidator):  # type: ignore[misc]
    """Connexion's JSON body validator with our parser, codes and byte limits."""

    async def _parse(self, stream: AsyncGenerator[bytes, None], scope: Scope) -> Any:
        raw = b"".join([chunk async for chunk in stream])
        if not raw:
            return None  # no body: the operation's defaults apply
        body = loads_strict(raw)
        if body is None:
            raise ApiError(Code.INVALID_BODY, "The request body must be a JSON object, not null.")
        return body

    def _validate(self, body: Any) -> None:
        if body is None:
            if self._required:
                raise ApiError(Code.INVALID_BODY, "This operation needs a JSON object body.")
            return
        error = best_match(_validator_for(self._schema).iter_errors(body))
        if error is not None:
            raise schema_error(error)
        check_extensions(self._schema, body)


class StrictParameterValidator(ParameterValidator):  # type: ignore[misc]
    """Connexion's parameter validator, raising catalog errors that name the parameter."""

    @staticmethod
    def validate_parameter(
        parameter_type: str, value: Any, param: dict[str, Any], param_name: str | None = None
    ) -> str | None:
        """The first error of one parameter value, or None; validators compiled once."""
        if is_nullable(param) and is_null(value):
            return None
        if value is None:
            required = param.get("required")
            return f"Missing {parameter_type} parameter '{param['name']}'" if required else None
        error = next(
            iter(_param_validator_for(param.get("schema", param)).iter_errors(value)), None
        )
        return None if error is None else str(error.message)

    def validate_request(self, request: Any) -> None:
        checks = (
            ("query", self.validate_query_parameter),
            ("path", self.validate_path_parameter),
            ("header", self.validate_header_parameter),
        )
        for location, check in checks:
            for param in self.parameters.get(location, []):
                error = check(param, request)
                if error:
                    code = (
                        Code.MISSING_PARAMETER
                        if error.startswith("Missing")
                        else Code.INVALID_PARAMETER
                    )
                    first_line = error.splitlines()[0]
                    raise ApiError(code, f"{param['name']}: {first_line}", param=param["name"])


def _param_validator_for(schema: dict[str, Any]) -> Any:
    entry = _compiled.get(id(schema))
    if entry is None or entry[0] is not schema:
        entry = (schema, Draft4Validator(schema, format_checker=Draft4Validator.FORMAT_CHECKER))
        _compiled[id(schema)] = entry
    return entry[1]


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


_response_validators: dict[int, tuple[dict[str, Any], Any]] = {}


def _response_validator_for(schema: dict[str, Any]) -> Any:
    entry = _response_validators.get(id(schema))
    if entry is None or entry[0] is not schema:
        compiled = jsonschema_rs.Draft4Validator(to_json_schema(schema), validate_formats=True)
        entry = (schema, compiled)
        _response_validators[id(schema)] = entry
    return entry[1]


class FastJSONResponseBodyValidator(AbstractResponseBodyValidator):  # type: ignore[misc]
    """Response bodies checked against the spec with a compiled jsonschema-rs validator."""

    def _parse(self, stream: Any) -> Any:
        raw = b"".join(stream)
        return orjson.loads(raw) if raw else None

    def _validate(self, body: Any) -> None:
        error = next(iter(_response_validator_for(self._schema).iter_errors(body)), None)
        if error is not None:
            path = "/".join(str(part) for part in error.instance_path)
            raise NonConformingResponseBody(
                detail=f"Response body does not conform to the spec at /{path}: {error.message}"
            )


def validator_map() -> dict[str, Any]:
    """The `validator_map` for Connexion (the body map must stay a MediaTypeDict)."""
    body = MediaTypeDict(VALIDATOR_MAP["body"])
    body["*/*json"] = StrictJSONBodyValidator
    response = MediaTypeDict(VALIDATOR_MAP["response"])
    response["*/*json"] = FastJSONResponseBodyValidator
    return {"body": body, "parameter": StrictParameterValidator, "response": response}
