"""tunnelgw.rules.traffic_policy: the document checker, the action table and the secret
references a policy reads."""

from __future__ import annotations

import json

import pytest

from tunnelgw.core.errors import ApiError, Code
from tunnelgw.rules import traffic_policy
from tunnelgw.rules.traffic_policy import expressions
from tunnelgw.rules.traffic_policy.actions import ACTIONS, CONNECT, REQUEST, RESPONSE

# A minimal valid config of each action type (the documented required fields).
MINIMAL: dict[str, dict[str, object]] = {
    "add-headers": {"headers": {"x-a": "1"}},
    "remove-headers": {"headers": ["x-a"]},
    "basic-auth": {"credentials": ["user:password"]},
    "circuit-breaker": {"error_threshold": 0.5},
    "close-connection": {},
    "compress-response": {},
    "custom-response": {},
    "deny": {},
    "forward-internal": {"url": "https://api.internal"},
    "http-request": {"url": "https://hook.example.com"},
    "jwt-validation": {
        "issuer": {"allow_list": [{"value": "https://issuer.example.com"}]},
        "http": {"tokens": [{"type": "jwt", "method": "header", "name": "Authorization"}]},
        "jws": {"allowed_algorithms": ["RS256"], "keys": {"sources": {"additional_jkus": []}}},
    },
    "log": {"metadata": {"a": 1}},
    "oauth": {"provider": "google"},
    "openid-connect": {"issuer_url": "https://issuer.example.com"},
    "owasp-crs-request": {"on_error": "halt"},
    "owasp-crs-response": {"on_error": "continue"},
    "rate-limit": {
        "name": "r",
        "algorithm": "sliding_window",
        "capacity": 10,
        "rate": "60s",
        "bucket_key": ["conn.client_ip"],
    },
    "redirect": {"to": "https://example.com"},
    "request-body-find-replace": {"replacements": [{"from": "a", "to": "b"}]},
    "response-body-find-replace": {"replacements": [{"from": "a"}]},
    "restrict-ips": {"enforce": True, "allow": ["10.0.0.0/8"]},
    "set-vars": {"vars": [{"a": 1}]},
    "terminate-tls": {"min_version": "1.3"},
    "url-rewrite": {"to": "/x"},
    "verify-webhook": {"provider": "github", "secret": "s"},
}


def _policy(kind: str, config: object, phase: str | None = None) -> str:
    phase = phase or ACTIONS[kind][0][0]
    return json.dumps({phase: [{"actions": [{"type": kind, "config": config}]}]})


def _fault(text: str, scheme: str | None = "https") -> ApiError:
    with pytest.raises(ApiError) as caught:
        traffic_policy.parse(text, scheme)
    assert caught.value.code is Code.INVALID_TRAFFIC_POLICY
    assert caught.value.details["field"] == "traffic_policy"
    return caught.value


def test_every_action_has_a_minimal_config():
    assert set(MINIMAL) == set(ACTIONS)


@pytest.mark.parametrize("kind", sorted(ACTIONS))
def test_each_action_accepts_its_config_and_refuses_unknown_fields(kind):
    for phase in ACTIONS[kind][0]:
        assert traffic_policy.parse(_policy(kind, MINIMAL[kind], phase)).secrets == []
    error = _fault(_policy(kind, {**MINIMAL[kind], "colour": "red"}))
    assert error.details["type"] == kind
    assert "colour" in error.msg


@pytest.mark.parametrize("kind", sorted(kind for kind, (_, s) in ACTIONS.items() if s["required"]))
def test_required_config_fields(kind):
    error = _fault(_policy(kind, {}))
    assert "required" in error.msg
    assert error.details["config"] == "config"


@pytest.mark.parametrize(
    ("kind", "config", "path"),
    [
        ("deny", {"status_code": 99}, "config.status_code"),
        ("deny", {"status_code": "403"}, "config.status_code"),
        ("rate-limit", {**MINIMAL["rate-limit"], "rate": "soon"}, "config.rate"),
        ("rate-limit", {**MINIMAL["rate-limit"], "algorithm": "fixed"}, "config.algorithm"),
        ("basic-auth", {"credentials": ["nocolon"]}, "config.credentials.0"),
        ("add-headers", {"headers": {}}, "config.headers"),
        ("set-vars", {"vars": [{"a": 1, "b": 2}]}, "config.vars.0"),
        ("terminate-tls", {"min_version": "1.1"}, "config.min_version"),
        ("restrict-ips", {"enforce": True, "ip_policies": ["rd_1"]}, "config.ip_policies.0"),
        ("custom-response", "hello", "config"),
    ],
)
def test_config_values_are_checked(kind, config, path):
    assert _fault(_policy(kind, config)).details["config"] == path


def test_actions_run_only_in_their_phases():
    error = _fault(_policy("terminate-tls", {}, REQUEST))
    assert "on_tcp_connect" in error.msg
    _fault(_policy("compress-response", {}, REQUEST))
    traffic_policy.parse(_policy("deny", {}, CONNECT), "tls")
    _fault(_policy("deny", {}, REQUEST), "tls")
    traffic_policy.parse(_policy("log", {"metadata": {}}, RESPONSE), "http")


def test_document_shapes():
    assert traffic_policy.parse("", "tcp").document == {}
    assert traffic_policy.parse("on_http_request:", "https").document == {"on_http_request": None}
    assert "a str" in _fault("hello").msg
    assert _fault("on_http_request: 3").msg.endswith("a phase is a list of rules")
    assert "a rule is a mapping" in _fault("on_http_request: [3]").msg
    assert "has no field 'when'" in _fault("on_http_request: [{when: 1, actions: []}]").msg
    assert (
        "name is a string" in _fault("on_http_request: [{name: [1], actions: [{type: deny}]}]").msg
    )
    assert (
        "expressions is a list"
        in _fault("on_http_request: [{expressions: 'x', actions: [{type: deny}]}]").msg
    )
    assert (
        "an expression is a string"
        in _fault("on_http_request: [{expressions: [1], actions: [{type: deny}]}]").msg
    )
    assert "an action is a mapping" in _fault("on_http_request: [{actions: [deny]}]").msg
    assert "unknown action type 1" in _fault("on_http_request: [{actions: [{type: 1}]}]").msg
    assert "nested too deeply" in _fault("[" * 20000).msg


def test_json_and_yaml_errors_say_where():
    policy = json.dumps({"on_http_request": [{"actions": [{"type": "deny"}]}]})
    assert (
        traffic_policy.parse(policy).document["on_http_request"][0]["actions"][0]["type"] == "deny"
    )
    # JSON that only YAML's flow style reads (unquoted keys) is taken as YAML.
    assert traffic_policy.parse("{on_tcp_connect: []}", "tcp").document == {"on_tcp_connect": []}
    error = _fault("on_http_request:\n  - actions: [\n")
    assert error.details["line"] == "3"
    assert "line 3" in error.msg


def test_expression_faults_give_the_column():
    error = _fault(
        "on_http_request: [{expressions: ['true', 'a ==== b'], actions: [{type: deny}]}]"
    )
    assert (error.details["rule"], error.details["expression"]) == ("0", "1")
    assert error.details["column"] == "5"
    error = _fault("on_http_request: [{expressions: ['  '], actions: [{type: deny}]}]")
    assert "empty" in error.msg


def test_secret_references():
    assert expressions.secret_references('secrets.get("v", "n")') == [("v", "n")]
    assert expressions.secret_references(
        "secrets.get('a','b') + secrets . get ( \"c\" , 'd' )"
    ) == [("a", "b"), ("c", "d")]
    assert expressions.secret_references("mysecrets.get('a', 'b') == 1") == []
    for bad in ('secrets.get(vault, "n")', 'secrets.get("v")', 'secrets.get("v\\"x", "n")'):
        with pytest.raises(expressions.PolicyFaultError):
            expressions.secret_references(bad)


def test_policy_secrets_are_collected_once_from_expressions_and_interpolations():
    text = """
on_http_request:
  - expressions: ["req.headers['k'][0] == secrets.get('vault', 'token')"]
    actions:
      - type: add-headers
        config:
          headers:
            authorization: "Bearer ${secrets.get('vault', 'token')}"
            x-other: "${secrets.get(\\"keys\\", \\"other\\")} and ${'}' + \\"{\\"}"
      - type: basic-auth
        config: {credentials: ["user:${secrets.get('vault', 'password')}"]}
"""
    assert traffic_policy.parse(text).secrets == [
        ("vault", "token"),
        ("keys", "other"),
        ("vault", "password"),
    ]


def test_interpolation_faults():
    error = _fault(_policy("custom-response", {"body": "ok ${conn.client_ip"}))
    assert "column 4 of the string" in error.msg
    error = _fault(_policy("custom-response", {"body": "${1 +}"}))
    assert error.details["config"] == "config.body"
    error = _fault(_policy("custom-response", {"headers": {"${secrets.get(1, 2)}": "v"}}))
    assert "two string literals" in error.msg
    assert list(expressions.interpolations("a ${'x\\'}'} b ${{'k': 1}.k}")) == [
        (4, "'x\\'}'"),
        (16, "{'k': 1}.k"),
    ]


def test_aliases_are_refused():
    error = _fault("a: &x [1]\nb: *x")
    assert "aliases" in error.msg
