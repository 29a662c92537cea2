"""ACL rules of tunnel and SSH credentials (tunnelgw.rules.acls): each form, and why a rule
that is none of them is refused."""

from __future__ import annotations

import pytest

from tunnelgw.core.errors import ApiError, Code
from tunnelgw.rules import acls

LABEL = "a" * 63
LONG_HOST = ".".join([LABEL] * 4)  # 255 characters


@pytest.mark.parametrize(
    "rule",
    [
        "*",
        "bind:example.com",
        "bind:*.example.com",
        "bind:EXAMPLE.com",
        "bind:1.tcp.example.com:1",
        "bind:1.tcp.example.com:65535",
        "bind:k=v",
        "bind:*=v",
        "bind:k=*",
        "bind:*=*",
        "bind:k.1_-=v=w",  # the value may hold '='
        f"bind:{'k' * 128}={'v' * 255}",
        f"bind:{'.'.join([LABEL] * 3)}.{'b' * 61}",  # 253 characters
    ],
)
def test_valid_rules(rule):
    assert acls.problem(rule) is None


@pytest.mark.parametrize(
    ("rule", "why"),
    [
        ("bind", "does not start with 'bind:'"),
        ("*.example.com", "does not start with 'bind:'"),
        ("bind:", "is not a hostname"),
        ("bind:*", "is not a hostname"),
        ("bind:a.*.com", "is not a hostname"),
        (f"bind:{LONG_HOST}", "is not a hostname"),
        (f"bind:{LONG_HOST}:443", "the host is longer than 253 characters"),
        ("bind:example.com:0", "needs a hostname and a port"),
        ("bind:example.com:080", "needs a hostname and a port"),
        ("bind:[::1]:443", "needs a hostname and a port"),
        ("bind:=v", "the label key"),
        (f"bind:{'k' * 129}=v", "the label key"),
        ("bind:k=\x7f", "the label value"),
        (f"bind:k={'v' * 256}", "the label value"),
    ],
)
def test_invalid_rules_say_why(rule, why):
    problem = acls.problem(rule)
    assert problem is not None
    assert why in problem


def test_checked_keeps_the_rules_and_names_the_first_bad_one():
    assert acls.checked(None) == []
    assert acls.checked(["*", "bind:x.com", "*"]) == ["*", "bind:x.com", "*"]
    with pytest.raises(ApiError) as raised:
        acls.checked(["bind:x.com", "bind:", "nope"])
    assert raised.value.code is Code.INVALID_ACL_RULE
    assert raised.value.details == {"field": "acl.1"}
    assert "acl[1] 'bind:'" in raised.value.msg


@pytest.mark.parametrize(
    ("rules", "asked", "allowed"),
    [
        ([], {"hostname": "app.example.com"}, True),
        (["*"], {"address": "1.tcp.example.com:20002"}, True),
        (["bind:app.example.com"], {"hostname": "APP.example.com"}, True),
        (["bind:app.example.com"], {"hostname": "api.example.com"}, False),
        (["bind:*.example.com"], {"hostname": "x.example.com"}, True),
        (["bind:*.example.com"], {"hostname": "*.example.com"}, True),
        (["bind:*.example.com"], {"hostname": "example.com"}, False),
        (["bind:*.example.com"], {"hostname": "x.example.org"}, False),
        (["bind:1.tcp.example.com:20002"], {"address": "1.tcp.example.com:20002"}, True),
        (["bind:1.tcp.example.com:20002"], {"address": "1.tcp.example.com:20003"}, False),
        (["bind:1.tcp.example.com:20002"], {"hostname": "1.tcp.example.com"}, False),
        (["bind:env=prod"], {"labels": {"env": "prod"}}, True),
        (["bind:env=prod"], {"labels": {"env": "prod", "app": "web"}}, False),
        (["bind:env=prod", "bind:*=web"], {"labels": {"env": "prod", "app": "web"}}, True),
        (["bind:env=*"], {"labels": {"env": "Staging"}}, True),
        (["bind:env=prod"], {"labels": {"env": "Prod"}}, False),
        (["bind:env=prod"], {"hostname": "env"}, False),
    ],
)
def test_what_a_credential_may_bind(rules: list[str], asked: dict, allowed: bool) -> None:
    assert acls.allows(rules, **asked) is allowed
