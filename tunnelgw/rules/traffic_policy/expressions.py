"""CEL in a traffic policy: rule expressions and `${...}` interpolations inside action config
strings, parsed by the server's one CEL engine (tunnelgw.rules.filtering.syntax_fault), and the
secrets they read (`secrets.get("vault", "name")`)."""

from __future__ import annotations

import re
from collections.abc import Iterator

from tunnelgw.rules.filtering import syntax_fault

_SECRETS_GET = re.compile(r"\bsecrets\s*\.\s*get\s*\(")
_LITERAL_ARGS = re.compile(
    r"""\s*(?:"(?P<v1>[^"\\\n]*)"|'(?P<v2>[^'\\\n]*)')\s*,"""
    r"""\s*(?:"(?P<n1>[^"\\\n]*)"|'(?P<n2>[^'\\\n]*)')\s*\)"""
)


class PolicyFaultError(ValueError):
    """Why an expression or interpolation cannot be used, and where (0-based offset)."""

    def __init__(self, reason: str, offset: int) -> None:
        super().__init__(reason)
        self.reason = reason
        self.offset = offset


def check(expression: str) -> list[tuple[str, str]]:
    """The (vault, secret) pairs `expression` reads; PolicyFaultError when CEL cannot parse it
    or a `secrets.get` call does not name its vault and secret as two string literals."""
    if not expression.strip():
        raise PolicyFaultError("the expression is empty", 0)
    fault = syntax_fault(expression)
    if fault is not None:
        raise PolicyFaultError(fault[1], fault[0])
    return secret_references(expression)


def secret_references(expression: str) -> list[tuple[str, str]]:
    """The (vault name, secret name) of each `secrets.get(...)` call in the CEL text
    `expression`, in order; PolicyFaultError for a call whose arguments are not two string
    literals."""
    found = []
    for call in _SECRETS_GET.finditer(expression):
        args = _LITERAL_ARGS.match(expression, call.end())
        if args is None:
            raise PolicyFaultError(
                "secrets.get takes the vault name and the secret name as two string literals, "
                'as in secrets.get("vault", "name")',
                call.start(),
            )
        found.append((args["v1"] or args["v2"] or "", args["n1"] or args["n2"] or ""))
    return found


def interpolations(text: str) -> Iterator[tuple[int, str]]:
    """Each `${expression}` of a config string: (offset of the expression, its text). A `}`
    inside a quoted string or a nested `{...}` does not end it; PolicyFaultError for one left
    open."""
    start = text.find("${")
    while start != -1:
        end = _closing(text, start + 2)
        if end is None:
            raise PolicyFaultError("an interpolation ${ is not closed with }", start)
        yield start + 2, text[start + 2 : end]
        start = text.find("${", end + 1)


def _closing(text: str, at: int) -> int | None:
    depth, quote, index = 0, "", at
    while index < len(text):
        char = text[index]
        if quote:
            if char == "\\":
                index += 1
            elif char == quote:
                quote = ""
        elif char in "\"'":
            quote = char
        elif char == "{":
            depth += 1
        elif char == "}":
            if depth == 0:
                return index
            depth -= 1
        index += 1
    return None
