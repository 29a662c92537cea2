"""ACL rules of tunnel and SSH credentials: what a credential may bind.

A rule is `*` (no restriction, as no rules at all) or `bind:` followed by one of
- a hostname, optionally a wildcard `*.` first (`bind:*.example.com`);
- a `host:port` address, the port 1..65535 (`bind:1.tcp.example.com:20002`);
- a label `key=value`, `*` for the key, the value or both (`bind:*=prod`): the key letters,
  digits, `_`, `.` and `-` (at most 128), the value no control characters (at most 255),
  as tunnel labels are.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from tunnelgw.core.errors import ApiError, Code

_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_HOSTNAME = re.compile(rf"(?:\*\.)?(?:{_LABEL}\.)*{_LABEL}")
_PORT = r"(?:[1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5])"
_ADDRESS = re.compile(rf"((?:{_LABEL}\.)*{_LABEL}):{_PORT}")
_LABEL_KEY = re.compile(r"\*|[A-Za-z0-9_.-]{1,128}")
_LABEL_VALUE = re.compile(r"[^\x00-\x1f\x7f]{0,255}")
MAX_HOSTNAME = 253
BIND = "bind:"
EXPECTED = (
    "an ACL rule is '*' or 'bind:' and a hostname ('bind:app.example.com', "
    "'bind:*.example.com'), a host:port address ('bind:1.tcp.example.com:20002') or a label "
    "key=value with '*' for either ('bind:env=prod', 'bind:*=prod')"
)


def problem(rule: str) -> str | None:
    """Why `rule` is not an ACL rule; None when it is one."""
    if rule == "*":
        return None
    if not rule.startswith(BIND):
        return "it does not start with 'bind:' (and is not '*')"
    target = rule[len(BIND) :]
    if "=" in target:
        key, _, value = target.partition("=")
        if not _LABEL_KEY.fullmatch(key):
            return f"the label key {key[:64]!r} is not '*' or letters, digits, '_', '.', '-'"
        if not _LABEL_VALUE.fullmatch(value):
            return "the label value is longer than 255 characters or has control characters"
        return None
    address = _ADDRESS.fullmatch(target)
    if address is not None:
        host = address.group(1)
        return None if len(host) <= MAX_HOSTNAME else "the host is longer than 253 characters"
    if ":" in target:
        return "a host:port address needs a hostname and a port 1..65535"
    if not _HOSTNAME.fullmatch(target) or len(target) > MAX_HOSTNAME:
        return f"{target[:64]!r} is not a hostname (a wildcard '*.' only first)"
    return None


def checked(rules: Sequence[str] | None, field: str = "acl") -> list[str]:
    """The ACL rules `rules` as stored (in order, as sent; None is none); ApiError(400
    ERR_INVALID_ACL_RULE) naming the first invalid one (`details.field`: `acl.<index>`)."""
    for index, rule in enumerate(rules or ()):
        why = problem(rule)
        if why is not None:
            raise ApiError(
                Code.INVALID_ACL_RULE,
                f"{field}[{index}] {rule[:128]!r}: {why}; {EXPECTED}.",
                context={"rule": rule[:128]},
                field=f"{field}.{index}",
            )
    return list(rules or ())


def _host_allowed(target: str, hostname: str) -> bool:
    if target.startswith("*."):  # `*.example.com` binds x.example.com and *.example.com
        return hostname.endswith(target[1:])
    return hostname == target


def _label_allowed(target: str, key: str, value: str) -> bool:
    rule_key, _, rule_value = target.partition("=")
    return rule_key in ("*", key) and rule_value in ("*", value)


def allows(
    rules: Sequence[str],
    *,
    hostname: str | None = None,
    address: str | None = None,
    labels: Mapping[str, str] | None = None,
) -> bool:
    """Whether an agent holding a credential with the ACL `rules` may bind `hostname` (lower
    case), the TCP `address` (`host:port`), or a labeled tunnel with `labels` (each label must
    be allowed). No rules, or a `*` rule, allow everything; else a `bind:` rule must match: a
    leading `*.` matches every name under it, and `*` a label's key or value."""
    if not rules or "*" in rules:
        return True
    targets = [rule[len(BIND) :] for rule in rules if rule.startswith(BIND)]
    names = [t.lower() for t in targets if "=" not in t]
    if hostname is not None:
        return any(_host_allowed(name, hostname.lower()) for name in names)
    if address is not None:
        return address.lower() in names
    return all(
        any("=" in t and _label_allowed(t, key, value) for t in targets)
        for key, value in (labels or {}).items()
    )
