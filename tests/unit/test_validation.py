"""The strict JSON parser and the schema-error mapping, without HTTP."""

from __future__ import annotations

from typing import ClassVar

import pytest

from tunnelgw.core.errors import ApiError, Code
from tunnelgw.http.explain import Explainer
from tunnelgw.http.validation import check_extensions, loads_strict, to_json_schema


@pytest.mark.parametrize(
    "raw",
    [
        b"{",
        b'{"a": 1, "a": 2}',
        b'{"a": NaN}',
        b'{"a": Infinity}',
        b'{"a": "\\u0000"}',
        b'{"\\u0000": 1}',
        b'{"a": "\\udc00"}',
        b"\xff\xfe",
        b"[" * 100_000,
        b"[" * 40 + b"]" * 40,
        b'{"n": ' + b"9" * 5000 + b"}",
    ],
)
def test_loads_strict_rejects(raw):
    with pytest.raises(ApiError) as info:
        loads_strict(raw)
    assert info.value.code is Code.INVALID_JSON


def test_loads_strict_accepts_clean_json():
    assert loads_strict('{"a": ["é", 1.5, null, {"b": true}]}'.encode()) == {
        "a": ["é", 1.5, None, {"b": True}]
    }


SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["name"],
    "properties": {
        "name": {"type": "string", "maxLength": 3, "x-max-bytes": 4},
        "tags": {
            "type": "object",
            "x-key-pattern": "^[a-z]+$",
            "additionalProperties": {"type": "string"},
        },
        "n": {"type": "integer", "minimum": 1},
    },
}


@pytest.mark.parametrize(
    ("body", "code", "field"),
    [
        ({}, Code.MISSING_FIELD, "name"),
        ({"name": "a", "x": 1}, Code.UNKNOWN_FIELD, "x"),
        ({"name": 1}, Code.WRONG_TYPE, "name"),
        ({"name": "abcd"}, Code.FIELD_TOO_LONG, "name"),
        ({"name": "a", "n": 0}, Code.INVALID_FIELD, "n"),
        ({"name": "a", "tags": {"k": 1}}, Code.WRONG_TYPE, "tags.k"),
    ],
)
def test_schema_errors_map_to_codes(body, code, field):
    error = Explainer(to_json_schema(SCHEMA)).explain(body)
    assert (error.code, error.details["field"]) == (code, field)


def test_root_type_error_is_invalid_body():
    error = Explainer(to_json_schema(SCHEMA)).explain([])
    assert error.code is Code.INVALID_BODY


def test_extensions_limit_bytes_and_keys():
    check_extensions(SCHEMA, {"name": "ab", "tags": {"ok": "1"}})
    check_extensions(SCHEMA, "not a dict")
    with pytest.raises(ApiError) as too_long:
        check_extensions(SCHEMA, {"name": "éé€"})
    assert too_long.value.code is Code.FIELD_TOO_LONG
    with pytest.raises(ApiError) as bad_key:
        check_extensions(SCHEMA, {"name": "a", "tags": {"NO": "1"}})
    assert bad_key.value.details["field"] == "tags.NO"


def test_openapi_schema_becomes_json_schema():
    from tunnelgw.http.validation import to_json_schema

    schema = {
        "type": "object",
        "x-note": "dropped",
        "properties": {
            "nullable": {"type": "string", "nullable": True, "example": "x"},
            "x-kept-property": {"type": "integer"},
            "choice": {"anyOf": [{"type": "integer", "nullable": True, "enum": [0]}]},
        },
    }
    assert to_json_schema(schema) == {
        "type": "object",
        "properties": {
            "nullable": {"type": ["string", "null"]},
            "x-kept-property": {"type": "integer"},
            "choice": {"anyOf": [{"type": ["integer", "null"], "enum": [0, None]}]},
        },
    }


def test_response_validator_rejects_nonconforming_bodies():
    from connexion.exceptions import NonConformingResponseBody

    from tunnelgw.http.pipeline.responses import Responses as _Responses

    schema = {
        "type": "object",
        "required": ["id"],
        "additionalProperties": False,
        "properties": {"id": {"type": "string"}, "at": {"type": "string", "format": "date-time"}},
    }

    class Operation:
        operation_id = "op"
        responses: ClassVar[dict[str, dict]] = {"200": {}, "204": {}, "default": {}}

        @staticmethod
        def response_schema(status: str, _mime: str) -> dict:
            return schema if status == "200" else {}

    checker = _Responses(Operation())  # type: ignore[arg-type]
    checker.check(200, {"id": "a", "at": "2026-11-21T10:11:14Z"})
    checker.check(204, None)
    bad_bodies = ({}, {"id": 1}, {"id": "a", "extra": 1}, {"id": "a", "at": "yesterday"})
    for status, bad in [*((200, b) for b in bad_bodies), (204, {"id": "a"}), (201, {"id": "a"})]:
        with pytest.raises(NonConformingResponseBody):
            checker.check(status, bad)


class _Operation:
    """What tunnelgw.http.pipeline.bodies.Body reads of a Connexion operation."""

    consumes: ClassVar[list[str]] = ["application/json"]
    request_body: ClassVar[dict] = {"required": True}

    @staticmethod
    def body_schema(_mime: str) -> dict:
        return SCHEMA


def test_a_large_body_is_checked_on_a_worker_thread():
    import asyncio
    import json
    import threading

    from tunnelgw.http.pipeline import bodies

    body = bodies.Body(_Operation())  # type: ignore[arg-type]
    seen: list[str] = []
    check = body.check

    def spy(raw: bytes) -> object:
        seen.append(threading.current_thread().name)
        return check(raw)

    body.check = spy  # type: ignore[method-assign]
    headers = [(b"content-type", b"application/json")]
    small = json.dumps({"name": "a"}).encode()
    keys = ("".join(chr(97 + int(d)) for d in str(i)) for i in range(5000))  # letters only
    large = json.dumps({"name": "a", "tags": dict.fromkeys(keys, "v" * 10)}).encode()
    assert len(large) > bodies.THREAD_BYTES
    assert asyncio.run(body.parse(headers, small)) == {"name": "a"}
    assert asyncio.run(body.parse(headers, large))["name"] == "a"
    assert seen[0] == threading.current_thread().name
    assert seen[1] != threading.current_thread().name
    with pytest.raises(ApiError) as invalid:
        asyncio.run(body.parse(headers, large.replace(b'"name": "a"', b'"name": 1')))
    assert invalid.value.code is Code.WRONG_TYPE
