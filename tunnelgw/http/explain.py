"""Why a request body is invalid: the first problem in it, as a catalog error with
`details.field`, found in time linear in the body. jsonschema-rs stays the authority: each
check asks a compiled validator of one subschema or one keyword, so no error list is built and
no pair of array items is compared in Python (tunnelgw.http.pipeline.bodies calls this only
for a body jsonschema-rs rejected).

The problem reported is the shallowest: the body's own keywords (type, enum, unknown, missing
and conflicting fields, limits) before its parts, parts in the order they were sent. A value
of a JSON type no alternative of an `anyOf`/`oneOf` accepts is `ERR_WRONG_TYPE`, like any
wrong type; otherwise the alternative the value went furthest into explains it.
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass
from typing import Any

import jsonschema_rs
import orjson

from tunnelgw.core.errors import ApiError, Code

SHOWN_CHARS = 60  # of a value quoted in a message
SHOWN_CHOICES = 8  # of an enum listed in a message
_LIMITS = {
    "maxLength": "is longer than {} characters",
    "maxItems": "has more than {} items",
    "maxProperties": "has more than {} entries",
}
_CHECKS = {  # keyword: message ({value}, {limit}); checked on the value itself, after the limits
    "minLength": "{value} is shorter than {limit} characters",
    "minItems": "has fewer than {limit} items",
    "minProperties": "has fewer than {limit} entries",
    "pattern": "{value} does not match {limit}",
    "minimum": "{value} is less than the minimum of {limit}",
    "maximum": "{value} is greater than the maximum of {limit}",
    "multipleOf": "{value} is not a multiple of {limit}",
    "uniqueItems": "has items that are not unique",
}
_PAIRED = {"minimum": "exclusiveMinimum", "maximum": "exclusiveMaximum"}  # draft 4 flags


@dataclass(frozen=True, slots=True)
class Problem:
    """One reason a value is invalid: its code, message, field and the depth of the value."""

    code: Code
    msg: str
    field: tuple[str, ...]
    depth: int
    # Values the platform profile's message quotes (ApiError.context).
    context: tuple[tuple[str, str], ...] = ()

    def error(self) -> ApiError:
        name = ".".join(self.field)
        if not name:
            return ApiError(Code.INVALID_BODY, f"The request body is invalid: {self.msg}")
        return ApiError(self.code, self.msg, context=dict(self.context), field=name)


class Explainer:
    """The first problem of bodies invalid under one JSON Schema (draft 4, as converted by
    tunnelgw.http.validation.to_json_schema); validators are compiled at first need."""

    def __init__(self, schema: dict[str, Any]) -> None:
        self.schema = schema
        self._validators: dict[Any, tuple[Any, Any]] = {}

    def explain(self, body: Any) -> ApiError:
        """The ApiError of a body the schema rejects."""
        if not self._valid(self.schema, "type", body):
            return ApiError(
                Code.INVALID_BODY, f"The request body must be a JSON object, not {_kind(body)}."
            )
        problem = self._problem(self.schema, body, ()) or self._fallback(self.schema, body, ())
        return problem.error()

    def _problem(self, node: Any, value: Any, path: tuple[str, ...]) -> Problem | None:
        """The first problem of `value` under `node` (None when it has none we can name)."""
        if not isinstance(node, dict) or self._valid(node, None, value):
            return None
        return (
            self._own(node, value, path)
            or self._alternatives(node, value, path)
            or self._parts(node, value, path)
            or self._fallback(node, value, path)
        )

    def _own(self, node: dict[str, Any], value: Any, path: tuple[str, ...]) -> Problem | None:
        """A keyword of `node` that fails on `value` itself, in report order."""
        at = _prefix(path)
        if "type" in node and not self._valid(node, "type", value):
            return _wrong_type(path, _types(node["type"]), value)
        accepted = _accepted(node)
        if accepted is not None and not self._is_type(accepted, value):
            return _wrong_type(path, accepted, value)
        if "enum" in node and not self._valid(node, "enum", value):
            choices = node["enum"]
            shown = ", ".join(_show(c) for c in choices[:SHOWN_CHOICES])
            more = (
                f" (or {len(choices) - SHOWN_CHOICES} more)" if len(choices) > SHOWN_CHOICES else ""
            )
            msg = f"{at}{_show(value)} is not one of {shown}{more}."
            return Problem(Code.INVALID_FIELD, msg, path, len(path))
        if isinstance(value, dict):
            found = _object_problem(node, value, path)
            if found is not None:
                return found
        if "not" in node and not self._valid(node, "not", value):
            return _excluded(node["not"], path)
        for keyword, text in _LIMITS.items():
            limit = node.get(keyword)
            if limit is not None and _size(value, keyword) > limit:
                sizes = (("limit", str(limit)), ("length", str(_size(value, keyword))))
                msg = f"{at}{text.format(limit)}."
                return Problem(Code.FIELD_TOO_LONG, msg, path, len(path), sizes)
        for keyword, text in _CHECKS.items():
            if keyword in node and not self._valid(node, keyword, value):
                msg = at + text.format(value=_show(value), limit=_show(node[keyword])) + "."
                return Problem(Code.INVALID_FIELD, msg, path, len(path))
        return None

    def _alternatives(
        self, node: dict[str, Any], value: Any, path: tuple[str, ...]
    ) -> Problem | None:
        """The problem of an `allOf` part, or of the `anyOf`/`oneOf` alternative the value
        went furthest into (the first on a tie; a tie at the value itself names them all)."""
        for part in node.get("allOf", ()):
            found = self._problem(part, value, path)
            if found is not None:
                return found
        for keyword in ("anyOf", "oneOf"):
            branches = node.get(keyword, ())
            if not branches or self._valid(node, keyword, value):
                continue
            if keyword == "oneOf" and any(self._valid(b, None, value) for b in branches):
                msg = f"{_prefix(path)}{_show(value)} matches more than one allowed form."
                return Problem(Code.INVALID_FIELD, msg, path, len(path))
            problems = [
                found
                for branch in branches
                if self._fits_type(branch, value)
                and (found := self._problem(branch, value, path)) is not None
            ]
            if problems:
                return _deepest(problems, len(path))
        return None

    def _parts(self, node: dict[str, Any], value: Any, path: tuple[str, ...]) -> Problem | None:
        """The problem of the first invalid member (in the order sent) or item."""
        if isinstance(value, dict):
            for key, member in value.items():
                sub = _member_schema(node, key)
                if isinstance(sub, dict) and not self._valid(sub, None, member):
                    return self._problem(sub, member, (*path, str(key)))
        elif isinstance(value, list):
            items = node.get("items")
            for index, item in enumerate(value):
                sub = items[index] if isinstance(items, list) and index < len(items) else items
                if isinstance(sub, dict) and not self._valid(sub, None, item):
                    return self._problem(sub, item, (*path, str(index)))
        return None

    def _fallback(self, node: Any, value: Any, path: tuple[str, ...]) -> Problem:
        """jsonschema-rs's own words, for a failure none of the above names (masked: the
        value is not quoted)."""
        validator = self._compiled(("mask", id(node)), node, lambda: node, mask="the value")
        try:
            validator.validate(value)
            text = "is invalid"
        except jsonschema_rs.ValidationError as exc:
            text = exc.message
        return Problem(Code.INVALID_FIELD, f"{_prefix(path)}{text}.", path, len(path))

    def _valid(self, node: Any, keyword: str | None, value: Any) -> bool:
        """Whether `value` passes `node` (keyword None) or only its `keyword`."""

        def schema() -> Any:
            if keyword is None:
                return node
            # Draft 4's exclusiveMinimum/Maximum are flags of minimum/maximum.
            flag = _PAIRED.get(keyword, "")
            return {keyword: node[keyword], **({flag: node[flag]} if flag in node else {})}

        return bool(self._compiled((keyword, id(node)), node, schema).is_valid(value))

    def _is_type(self, types: tuple[str, ...], value: Any) -> bool:
        if not types:  # alternatives or parts that exclude each other's types
            return False
        validator = self._compiled(("types", types), types, lambda: {"type": list(types)})
        return bool(validator.is_valid(value))

    def _fits_type(self, branch: Any, value: Any) -> bool:
        accepted = _accepted(branch)
        return accepted is None or self._is_type(accepted, value)

    def _compiled(self, key: Any, owner: Any, schema: Any, **options: Any) -> Any:
        """The validator cached under `key` for `owner` (a node of the schema: the cache holds
        it, so its id is not reused), compiled from `schema()` at first need."""
        entry = self._validators.get(key)
        if entry is None or entry[0] is not owner:
            entry = self._validators[key] = (
                owner,
                jsonschema_rs.Draft4Validator(schema(), **options),
            )
        return entry[1]


def _accepted(node: Any) -> tuple[str, ...] | None:
    """The JSON types `node` can accept at all, from its `type` and those of its parts and
    alternatives, in the order declared; None for any type."""
    if not isinstance(node, dict):
        return None
    accepted = _types(node["type"]) if "type" in node else None
    limits = [_accepted(part) for part in node.get("allOf", ())]
    for keyword in ("anyOf", "oneOf"):
        if keyword in node:
            alternatives = [_accepted(branch) for branch in node[keyword]]
            if all(types is not None for types in alternatives):
                limits.append(tuple(dict.fromkeys(t for ts in alternatives for t in ts or ())))
    for types in limits:
        if types is not None:
            accepted = types if accepted is None else tuple(t for t in accepted if t in types)
    return accepted


def _member_schema(node: dict[str, Any], key: str) -> Any:
    """The schema of member `key`: its property's, else the first matching pattern's, else
    `additionalProperties` (a schema, or a boolean)."""
    properties = node.get("properties", {})
    if key in properties:
        return properties[key]
    for pattern, schema in node.get("patternProperties", {}).items():
        if _regex(pattern).search(key):
            return schema
    return node.get("additionalProperties")


@functools.cache
def _regex(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def _object_problem(
    node: dict[str, Any], value: dict[str, Any], path: tuple[str, ...]
) -> Problem | None:
    """An unknown member or a missing required one."""
    if node.get("additionalProperties") is False:
        known = node.get("properties", {})
        patterns = [_regex(p) for p in node.get("patternProperties", {})]
        for key in value:
            if key not in known and not any(p.search(key) for p in patterns):
                field = (*path, str(key))
                supported = (("supported", ", ".join(known)),)
                msg = f"Unknown field {'.'.join(field)!r}."
                return Problem(Code.UNKNOWN_FIELD, msg, field, len(path), supported)
    for name in node.get("required", ()):
        if name not in value:
            field = (*path, name)
            return Problem(Code.MISSING_FIELD, f"{'.'.join(field)} is required.", field, len(path))
    return None


def _excluded(schema: Any, path: tuple[str, ...]) -> Problem:
    """The problem of a value that matches a `not`: `not: {required: [a, b]}` is the spec's
    way of saying fields exclude each other."""
    names: list[str] = list(schema.get("required", ())) if isinstance(schema, dict) else []
    if len(names) > 1:
        fields = [".".join((*path, n)) for n in names]
        return Problem(
            Code.CONFLICTING_FIELDS,
            f"{' and '.join(fields)} exclude each other; send one of them.",
            (*path, names[-1]),
            len(path),
        )
    return Problem(
        Code.INVALID_FIELD, f"{_prefix(path)}this value is not allowed.", path, len(path)
    )


def _deepest(problems: list[Problem], depth: int) -> Problem:
    """The problem found deepest (the first on a tie); alternatives that all fail at the value
    itself are named together."""
    best = max(problems, key=lambda p: p.depth)
    tied = [p for p in problems if p.depth == best.depth]
    first = tied[0]
    if len(tied) == 1 or best.depth > depth:
        return first
    codes = {p.code for p in tied}
    code = first.code if len(codes) == 1 else Code.INVALID_FIELD
    at = _prefix(first.field[:depth])
    messages = dict.fromkeys(p.msg.removeprefix(at).rstrip(".") for p in tied)
    return Problem(code, at + "; or ".join(messages) + ".", first.field, first.depth)


def _wrong_type(path: tuple[str, ...], types: tuple[str, ...], value: Any) -> Problem:
    expected = " or ".join(types) or "no value at all"
    msg = f"{_prefix(path)}expected {expected}, got {_kind(value)}."
    return Problem(Code.WRONG_TYPE, msg, path, len(path))


def _types(declared: Any) -> tuple[str, ...]:
    return (declared,) if isinstance(declared, str) else tuple(declared)


def _size(value: Any, keyword: str) -> int:
    expected = {"maxLength": str, "maxItems": list, "maxProperties": dict}[keyword]
    return len(value) if isinstance(value, expected) else 0


def _prefix(path: tuple[str, ...]) -> str:
    return f"{'.'.join(path)}: " if path else ""


def _kind(value: Any) -> str:
    """The JSON type of a parsed JSON value, as JSON Schema names it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):  # 1e999 parses as inf, which no JSON Schema number accepts
        return "number" if math.isfinite(value) else "an out-of-range number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _show(value: Any) -> str:
    """A short rendering of a value for a message (containers by their size only)."""
    if isinstance(value, list):
        return f"an array of {len(value)} items"
    if isinstance(value, dict):
        return f"an object of {len(value)} entries"
    if isinstance(value, str) and len(value) > SHOWN_CHARS:
        return orjson.dumps(value[:SHOWN_CHARS]).decode()[:-1] + '..."'
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)[:SHOWN_CHARS]  # also past 64 bits, and inf
    return orjson.dumps(value).decode()
