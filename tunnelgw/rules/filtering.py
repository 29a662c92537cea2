"""List filters: the documented subset of CEL, checked against the item schema, run by cel-rust.

`compile_filter` checks an expression once per request; `Filter.matches` runs it on each item
(a dict as the API returns it). The `common-expression-language` package (cel-rust) parses
and evaluates; `tunnelgw.rules.filter_check` keeps to the subset, rejects unknown fields and
type-checks against the item's JSON schema. Every error is an `ApiError` (400, `details.param`
`filter`) whose message gives the column: the 1-based character offset in the expression.

For speed each `obj.a.b` path is read in Python and handed to CEL as one variable, and each
`timestamp(...)` constant (with its `.add`/`.subtract`) is computed once; `.add("1h")` on a
field becomes `+` a duration variable. The checker rewrites those spans to names padded to
the same width, so the program CEL runs keeps the user's offsets and needs no Python
callbacks. Fields whose schema says `format: date-time` are converted to timestamps.

Semantics: an item on which evaluation fails (a null or absent object along a path, a
timestamp field that is not RFC 3339) does not match, as a SQL row whose column is NULL
fails a WHERE clause: a filter never fails halfway through a page because of one item's
data, and errors the schema can predict are 400s at compile time. CEL's `&&` and `||`
absorb such errors when the other side decides (`obj.certificate == null ||
obj.certificate.id == "x"`). `size()` of a string counts UTF-8 bytes (cel-rust).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from tunnelgw.core import timefmt
from tunnelgw.core.errors import ApiError, Code
from tunnelgw.rules.filter_check import Checker, error, parse_duration, parse_timestamp

if TYPE_CHECKING:
    import cel

# cel-rust is imported by the functions that use it: a server that never filters a list does
# not load it (nor its command line's prompt_toolkit, typer and rich).

__all__ = [
    "MAX_FILTER_BYTES",
    "Filter",
    "compile_filter",
    "parse_duration",
    "parse_timestamp",
    "syntax_fault",
]

MAX_FILTER_BYTES = 4096
_EVAL_ERRORS = (ValueError, TypeError, RuntimeError, KeyError, OverflowError)


@dataclass
class Filter:
    """A compiled filter; `matches` is cheap, so compile once per request."""

    program: cel.Program
    paths: list[tuple[str, tuple[str, ...], bool]]  # variable, path, is a timestamp
    constants: dict[str, Any]
    context: cel.Context = field(init=False)

    def __post_init__(self) -> None:
        import cel

        self.context = cel.Context(self.constants)

    def matches(self, item: Mapping[str, Any]) -> bool:
        """True if the expression is true for `item`; false if it is false or fails on it.

        Not thread-safe (the CEL context is reused): compile one per request.
        """
        import cel

        values, context = {}, self.context
        for name, path, is_timestamp in self.paths:
            value: Any = item
            for key in path:
                if not isinstance(value, Mapping) or key not in value:
                    # Left unbound: CEL reports an error, as for a field of null.
                    context = cel.Context(self.constants)
                    break
                value = value[key]
            else:
                if is_timestamp and isinstance(value, str):
                    value = parse_timestamp(value) or value
                values[name] = value
        try:
            context.update(values)
            return self.program.execute(context) is True
        except _EVAL_ERRORS:
            return False


def compile_filter(
    expression: str,
    item_schema: Mapping[str, Any],
    *,
    spec: Mapping[str, Any] | None = None,
    now: datetime | None = None,
) -> Filter:
    """Check `expression` against the list item's JSON schema and compile it.

    `spec` is the document that the schema's local `$ref`s point into; `now` is what
    `timestamp(time.now)` means (default: the current time). Raises `ApiError` with
    FILTER_TOO_LONG, FILTER_SYNTAX, FILTER_UNKNOWN_FIELD or FILTER_TYPE (400, param `filter`).
    """
    import cel

    _check_text(expression)
    fault = syntax_fault(expression)
    if fault is not None:
        raise error(Code.FILTER_SYNTAX, fault[1], fault[0])
    checker = Checker(expression, item_schema, spec or {}, now or timefmt.now())
    checker.check()
    paths = [(name, path, ts) for path, (name, ts) in checker.paths.items()]
    return Filter(cel.compile(checker.rewritten()), paths, checker.constants)


def _check_text(expression: str) -> None:
    try:
        size = len(expression.encode())
    except UnicodeEncodeError as exc:
        raise error(Code.FILTER_SYNTAX, "a lone surrogate is not text", exc.start) from None
    if size > MAX_FILTER_BYTES:
        raise ApiError(
            Code.FILTER_TOO_LONG,
            f"The filter is {size} bytes long; the limit is {MAX_FILTER_BYTES}.",
            param="filter",
        )
    if not expression.strip():
        raise error(Code.FILTER_SYNTAX, "the filter is empty", 0)


def syntax_fault(expression: str) -> tuple[int, str] | None:
    """Where and why cel-rust cannot parse `expression`: (0-based character offset, reason),
    or None when it parses. The one CEL engine of the server: list filters and traffic
    policy expressions (tunnelgw.rules.traffic_policy) are parsed by it alike."""
    import cel

    try:
        cel.compile(expression)
    except ValueError as exc:
        return _fault(expression, str(exc))
    return None


def _fault(expression: str, message: str) -> tuple[int, str]:
    """cel-rust says `<input>:LINE:COLUMN: reason`; turn it into our offset and reason."""
    found = re.search(r"<input>:(\d+):(\d+): (?:Syntax error: )?([^\n]*)", message)
    if found is None:
        return 0, "not a valid expression"
    line, column, reason = int(found[1]), int(found[2]), found[3]
    offset = sum(len(text) + 1 for text in expression.split("\n")[: line - 1]) + column - 1
    return min(offset, len(expression)), reason[:200]
