"""Parsing and checking a traffic policy document (YAML or JSON): its phases, their rules, each
rule's expressions and actions, each action's config against its type's schema
(tunnelgw.rules.traffic_policy.actions). Every fault is one ApiError(400
ERR_INVALID_TRAFFIC_POLICY) whose message and details name the phase, rule, action, expression
or config field at fault."""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import jsonschema
import yaml

from tunnelgw.core.errors import ApiError, Code
from tunnelgw.rules.traffic_policy import expressions
from tunnelgw.rules.traffic_policy.actions import ACTIONS, PHASES, SCHEME_PHASES

RULE_KEYS = ("name", "expressions", "actions")
ACTION_KEYS = ("type", "config")


@dataclass
class Policy:
    """A checked policy: the parsed document and the secrets its CEL reads, each once."""

    document: dict[str, Any]
    secrets: list[tuple[str, str]] = field(default_factory=list)


@dataclass(frozen=True)
class _At:
    """Where in the document a fault is: phase, rule index, action index, and more."""

    details: tuple[tuple[str, str], ...] = ()
    words: tuple[str, ...] = ()

    def then(self, key: str, value: str, words: str) -> _At:
        return _At((*self.details, (key, value)), (*self.words, words))

    def fault(self, what: str) -> ApiError:
        where = ", ".join(self.words)
        details = {"field": "traffic_policy", **dict(self.details)}
        message = f"Invalid traffic_policy{' at ' + where if where else ''}: {what}"
        error = ApiError(Code.INVALID_TRAFFIC_POLICY, message)
        error.details = details
        return error


class _Loader(yaml.SafeLoader):
    """Safe YAML without anchors and aliases (a few aliases can stand for billions of nodes)."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            mark = self.peek_event().start_mark  # type: ignore[no-untyped-call]
            raise yaml.MarkedYAMLError(
                problem="aliases (*name) are not accepted", problem_mark=mark
            )
        return super().compose_node(parent, index)


def load(text: str) -> Any:
    """The document `text` holds, read as JSON when it is JSON, else as YAML; ApiError(400)
    with the line and column of a syntax error."""
    if text.lstrip().startswith("{"):
        try:
            return json.loads(text)
        except ValueError:
            pass  # YAML's flow style reads what JSON does not (e.g. unquoted keys)
    try:
        return yaml.load(text, Loader=_Loader)  # noqa: S506 - a SafeLoader
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = _At()
        if mark is not None:
            where = _At((("line", str(mark.line + 1)), ("column", str(mark.column + 1))))
        position = "" if mark is None else f" (line {mark.line + 1}, column {mark.column + 1})"
        raise where.fault(f"not valid YAML or JSON{position}: {exc.problem}") from None
    except yaml.YAMLError as exc:
        raise _At().fault(f"not valid YAML or JSON: {exc}") from None


def parse(text: str, scheme: str | None = None) -> Policy:
    """The checked policy of `text`; with `scheme`, the phases must be ones an endpoint of
    that scheme runs (tcp and tls: on_tcp_connect only). ApiError(400) on the first fault."""
    try:
        return _parse(text, scheme)
    except RecursionError:
        raise _At().fault("the document is nested too deeply") from None


def _parse(text: str, scheme: str | None) -> Policy:
    document = load(text)
    if document is None:
        document = {}
    if not isinstance(document, Mapping):
        kind = type(document).__name__
        raise _At().fault(f"the document is a {kind}; write a mapping of phases to rule lists")
    policy = Policy(dict(document))
    allowed = SCHEME_PHASES[scheme] if scheme else PHASES
    for phase, rules in document.items():
        at = _At((("phase", str(phase)),), (str(phase),))
        if phase not in PHASES:
            raise at.fault(f"unknown phase {phase!r}; the phases are {', '.join(PHASES)}")
        if phase not in allowed:
            raise at.fault(f"a {scheme} endpoint runs only {', '.join(allowed)}")
        if rules is None:
            continue
        if not isinstance(rules, list):
            raise at.fault("a phase is a list of rules")
        for index, rule in enumerate(rules):
            _rule(policy, phase, rule, at.then("rule", str(index), f"rule {index}"))
    return policy


def _rule(policy: Policy, phase: str, rule: Any, at: _At) -> None:
    if not isinstance(rule, Mapping):
        raise at.fault("a rule is a mapping of name, expressions and actions")
    _known_keys(rule, RULE_KEYS, at, "a rule")
    if not isinstance(rule.get("name", ""), str):
        raise at.fault("name is a string")
    listed = rule.get("expressions") or []
    if not isinstance(listed, list):
        raise at.fault("expressions is a list of CEL expressions")
    for index, expression in enumerate(listed):
        where = at.then("expression", str(index), f"expression {index}")
        if not isinstance(expression, str):
            raise where.fault("an expression is a string of CEL")
        _cel(policy, expression, where)
    actions = rule.get("actions")
    if not isinstance(actions, list) or not actions:
        raise at.fault("a rule needs actions: a list of one or more actions")
    for index, action in enumerate(actions):
        _action(policy, phase, action, at.then("action", str(index), f"action {index}"))


def _action(policy: Policy, phase: str, action: Any, at: _At) -> None:
    if not isinstance(action, Mapping):
        raise at.fault("an action is a mapping of type and config")
    _known_keys(action, ACTION_KEYS, at, "an action")
    kind = action.get("type")
    if not isinstance(kind, str) or kind not in ACTIONS:
        known = ", ".join(sorted(ACTIONS))
        raise at.fault(f"unknown action type {kind!r}; the types are {known}")
    at = _At((*at.details, ("type", kind)), (*at.words[:-1], f"{at.words[-1]} ({kind})"))
    phases = ACTIONS[kind][0]
    if phase not in phases:
        raise at.fault(f"{kind} runs in {', '.join(phases)}, not {phase}")
    config = action.get("config")
    config = {} if config is None else config
    error = jsonschema.exceptions.best_match(_validator(kind).iter_errors(config))
    if error is not None:
        path = ".".join(str(part) for part in ("config", *error.absolute_path))
        raise at.then("config", path, path).fault(error.message)
    for path, text in _strings(config, "config"):
        try:
            _interpolated(policy, text)
        except expressions.PolicyFaultError as exc:
            where = at.then("config", path, path)
            raise where.fault(f"column {exc.offset + 1} of the string: {exc.reason}") from None


def _interpolated(policy: Policy, text: str) -> None:
    """Check each `${...}` of a config string; a Fault's offset is the string's."""
    for offset, expression in expressions.interpolations(text):
        try:
            found = expressions.check(expression)
        except expressions.PolicyFaultError as exc:
            raise expressions.PolicyFaultError(exc.reason, offset + exc.offset) from None
        policy.secrets.extend(pair for pair in found if pair not in policy.secrets)


@functools.cache
def _validator(kind: str) -> jsonschema.protocols.Validator:
    schema = ACTIONS[kind][1]
    return jsonschema.Draft202012Validator(schema)


def _cel(policy: Policy, expression: str, at: _At) -> None:
    try:
        found = expressions.check(expression)
    except expressions.PolicyFaultError as exc:
        column = (("column", str(exc.offset + 1)),)
        where = _At((*at.details, *column), (*at.words, f"column {exc.offset + 1}"))
        raise where.fault(exc.reason) from None
    policy.secrets.extend(pair for pair in found if pair not in policy.secrets)


def _known_keys(item: Mapping[Any, Any], keys: tuple[str, ...], at: _At, what: str) -> None:
    for key in item:
        if key not in keys:
            raise at.fault(f"{what} has no field {key!r}; its fields are {', '.join(keys)}")


def _strings(value: Any, path: str) -> Iterator[tuple[str, str]]:
    """Each string inside a config (values and keys), with its path (`config.headers.x`)."""
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from _strings(key, path)
            yield from _strings(item, f"{path}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _strings(item, f"{path}.{index}")
