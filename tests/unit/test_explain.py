"""Naming the first problem of an invalid body (tunnelgw.http.explain): one catalog code per
kind of failure wherever it occurs, the shallowest problem first, and time linear in the
body."""

from __future__ import annotations

import time
from typing import Any

import jsonschema_rs
import pytest

from tunnelgw.core.errors import Code
from tunnelgw.http.explain import Explainer
from tunnelgw.http.validation import to_json_schema

SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "not": {"required": ["a", "b"]},
    "properties": {
        "a": {"type": "string", "nullable": True},
        "b": {"type": "string", "minLength": 2},
        "status": {
            "anyOf": [
                {"type": "integer", "nullable": True, "enum": [0, None]},
                {"type": "integer", "minimum": 100, "maximum": 599},
            ]
        },
        "form": {
            "oneOf": [
                {"type": "object", "required": ["x"], "properties": {"x": {"type": "integer"}}},
                {"type": "object", "required": ["y"], "properties": {"y": {"type": "string"}}},
            ]
        },
        "host": {"type": "string", "allOf": [{"pattern": "^[a-z.]+$"}, {"maxLength": 10}]},
        "list": {
            "type": "array",
            "maxItems": 3,
            "minItems": 1,
            "uniqueItems": True,
            "items": {"type": "object", "required": ["value"]},
        },
        "pair": {"type": "array", "items": [{"type": "string"}, {"type": "integer"}]},
        "tags": {
            "type": "object",
            "maxProperties": 2,
            "additionalProperties": False,
            "patternProperties": {"^x-": {"type": "string"}},
        },
        "color": {
            "enum": ["red", "green", "blue", "cyan", "magenta", "yellow", "black", "white", "gray"]
        },
        "even": {"type": "integer", "multipleOf": 2},
        "odd": {"not": {"multipleOf": 2}},
        "three": {"type": "string", "minLength": 3, "maxLength": 3},
        "ratio": {"type": "number", "minimum": 0, "exclusiveMinimum": True},
        "flag": {"type": "boolean"},
    },
}


def explain(body: Any, schema: dict[str, Any] = SCHEMA) -> tuple[Code, str | None, str]:
    converted = to_json_schema(schema)
    assert not jsonschema_rs.Draft4Validator(converted).is_valid(body), "the body is valid"
    error = Explainer(converted).explain(body)
    return error.code, error.details.get("field"), error.msg


@pytest.mark.parametrize(
    ("body", "code", "field"),
    [
        # A wrong JSON type is ERR_WRONG_TYPE: plain, nullable, inside anyOf / oneOf.
        ({"a": 5}, Code.WRONG_TYPE, "a"),
        ({"b": None}, Code.WRONG_TYPE, "b"),
        ({"b": True}, Code.WRONG_TYPE, "b"),
        ({"flag": "true"}, Code.WRONG_TYPE, "flag"),
        ({"status": "503"}, Code.WRONG_TYPE, "status"),
        ({"status": 200.5}, Code.WRONG_TYPE, "status"),
        ({"form": []}, Code.WRONG_TYPE, "form"),
        ({"pair": ["a", "b"]}, Code.WRONG_TYPE, "pair.1"),
        ({"tags": {"x-a": 1}}, Code.WRONG_TYPE, "tags.x-a"),
        # The object's own keywords.
        ({"c": 1}, Code.UNKNOWN_FIELD, "c"),
        ({"tags": {"other": "1"}}, Code.UNKNOWN_FIELD, "tags.other"),
        ({"a": "x", "b": "yy"}, Code.CONFLICTING_FIELDS, "b"),
        ({"list": [{}]}, Code.MISSING_FIELD, "list.0.value"),
        # Limits, then the other value keywords.
        ({"tags": {"x-a": "1", "x-b": "2", "x-c": "3"}}, Code.FIELD_TOO_LONG, "tags"),
        ({"list": [{"value": i} for i in range(4)]}, Code.FIELD_TOO_LONG, "list"),
        ({"three": "four"}, Code.FIELD_TOO_LONG, "three"),
        ({"three": "tw"}, Code.INVALID_FIELD, "three"),
        ({"list": []}, Code.INVALID_FIELD, "list"),
        ({"list": [{"value": 1}, {"value": 1}]}, Code.INVALID_FIELD, "list"),
        ({"b": "y"}, Code.INVALID_FIELD, "b"),
        ({"even": 3}, Code.INVALID_FIELD, "even"),
        ({"ratio": 0}, Code.INVALID_FIELD, "ratio"),  # draft 4: exclusiveMinimum is a flag
        ({"odd": 4}, Code.INVALID_FIELD, "odd"),
        ({"color": "pink"}, Code.INVALID_FIELD, "color"),
        # allOf: its first failing part; oneOf: the form that went furthest, or both valid.
        ({"host": "UPPER"}, Code.INVALID_FIELD, "host"),
        ({"host": "a" * 11}, Code.FIELD_TOO_LONG, "host"),
        ({"form": {"y": 5}}, Code.WRONG_TYPE, "form.y"),
        ({"form": {"x": 1, "y": "s"}}, Code.INVALID_FIELD, "form"),
    ],
)
def test_each_kind_of_failure_has_its_code(body, code, field):
    assert explain(body)[:2] == (code, field)


def test_a_value_no_alternative_accepts_names_them_all():
    code, field, msg = explain({"status": 42})
    assert (code, field) == (Code.INVALID_FIELD, "status")
    assert msg == "status: 42 is not one of 0, null; or 42 is less than the minimum of 100."


def test_messages_say_what_to_fix_without_quoting_large_values():
    assert explain({"a": 5})[2] == "a: expected string or null, got integer."
    assert explain({"color": "pink"})[2].endswith('"black", "white" (or 1 more).')
    assert explain({"list": []})[2] == "list: has fewer than 1 items."
    assert explain({"b": None})[2] == "b: expected string, got null."
    assert explain({"flag": "true"})[2] == "flag: expected boolean, got string."
    assert explain({"odd": 4})[2] == "odd: this value is not allowed."
    long = "Z" * 10_000
    code, _, msg = explain({"host": long})
    assert code is Code.INVALID_FIELD
    assert len(msg) < 200
    assert '"ZZZ' in msg
    assert '..."' in msg
    assert explain({"color": {"k": 1}})[2].startswith("color: an object of 1 entries is not")
    assert explain({"color": [1, 2]})[2].startswith("color: an array of 2 items is not")


def test_numbers_beyond_64_bits_and_infinity_are_shown():
    schema = {"type": "object", "properties": {"n": {"type": "number", "maximum": 10}}}
    assert explain({"n": 2**70}, schema)[2] == f"n: {2**70} is greater than the maximum of 10."
    # 1e999 parses as inf, which is no JSON Schema number.
    assert explain({"n": float("inf")}, schema)[:2] == (Code.WRONG_TYPE, "n")
    assert explain({"n": float("inf")}, schema)[2].endswith("got an out-of-range number.")


def test_the_shallowest_problem_comes_first_then_members_in_the_order_sent():
    assert explain({"b": "y", "c": 1})[:2] == (Code.UNKNOWN_FIELD, "c")
    assert explain({"three": "x", "b": "y"})[:2] == (Code.INVALID_FIELD, "three")
    assert explain({"b": "y", "three": "x"})[:2] == (Code.INVALID_FIELD, "b")


def test_a_problem_of_the_body_itself_is_invalid_body():
    code, field, msg = explain([], SCHEMA)
    assert (code, field) == (Code.INVALID_BODY, None)
    assert msg == "The request body must be a JSON object, not array."
    root = {"type": "object", "maxProperties": 1}
    code, field, msg = explain({"a": 1, "b": 2}, root)
    assert (code, field) == (Code.INVALID_BODY, None)
    assert "more than 1 entries" in msg


def test_alternatives_at_the_top_report_the_form_sent_furthest():
    schema = {
        "type": "object",
        "anyOf": [
            {"required": ["backend_id"]},
            {
                "required": ["module"],
                "properties": {"module": {"type": "object", "required": ["backend_id"]}},
            },
        ],
        "properties": {"backend_id": {"type": "string"}, "module": {"type": "object"}},
    }
    assert explain({}, schema)[:2] == (Code.MISSING_FIELD, "backend_id")
    assert explain({}, schema)[2] == "backend_id is required; or module is required."
    assert explain({"module": {}}, schema)[:2] == (Code.MISSING_FIELD, "module.backend_id")


def test_a_failure_no_rule_names_gets_the_validators_own_words():
    schema = {
        "type": "object",
        "properties": {"d": {"type": "object", "dependencies": {"a": ["b"]}}},
    }
    code, field, msg = explain({"d": {"a": 1}}, schema)
    assert (code, field) == (Code.INVALID_FIELD, "d")
    assert msg.startswith("d: ")
    assert "b" in msg


def test_a_megabyte_of_invalid_items_is_explained_in_milliseconds():
    """Python jsonschema's explanation compared every pair of items (quadratic): 4,000
    distinct items took seconds. Here each check is one call into jsonschema-rs."""
    schema = {
        "type": "object",
        "properties": {
            "items": {
                "type": "array",
                "uniqueItems": True,
                "items": {"type": "object", "properties": {"v": {"enum": ["a", "b"]}}},
            }
        },
    }
    body = {"items": [{"v": f"x{i}"} for i in range(60_000)]}  # ~1 MiB
    started = time.perf_counter()
    code, field, _ = explain(body, schema)
    assert time.perf_counter() - started < 0.5
    assert (code, field) == (Code.INVALID_FIELD, "items.0.v")


def test_parts_that_accept_no_common_type_make_any_value_a_wrong_type():
    schema = {
        "type": "object",
        "properties": {"n": {"allOf": [{"type": "string"}, {"type": "null"}]}},
    }
    assert explain({"n": 1}, schema)[:2] == (Code.WRONG_TYPE, "n")
