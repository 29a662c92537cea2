"""The filter checker: the CEL subset, field names and types, against the item's JSON schema.

cel-rust parses filters but exposes no syntax tree, so this module walks the tokens of an
expression it accepted with a small recursive-descent grammar of the documented subset:
`||`, `&&`, the relations (`==` `!=` `<` `<=` `>` `>=` `in`), `!`, parentheses, list
literals, `startsWith`/`endsWith`/`contains`/`size`, `timestamp(...)` and `.add`/`.subtract`.
It knows each value's possible kinds (string, number, bool, timestamp, list, map, null, or
dyn when the schema does not say), so it can reject unknown fields and mistyped operands with
the column where they are. It also records the spans to rewrite: obj paths, timestamp
constants and `.add`/`.subtract` on fields (`+_d0`), replaced by variable names padded to the
same width.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from tunnelgw.core import timefmt
from tunnelgw.core.errors import ApiError, Code

# cel-rust is imported by the functions that use it: a server that never filters a list does
# not load it (nor its command line's prompt_toolkit, typer and rich).


MAX_DEPTH = 32
_TOKEN = re.compile(
    r"""(?P<ws>\s+|//[^\n]*)
    |(?P<raw>[rRbB]{1,2}['"])
    |(?P<str>'''(?:\\.|[^\\])*?'''|\"\"\"(?:\\.|[^\\])*?\"\"\"|'(?:\\.|[^'\\\n])*'|"(?:\\.|[^"\\\n])*")
    |(?P<num>0[xX][0-9a-fA-F]+[uU]?|(?:\d+\.\d+|\.\d+|\d+)(?:[eE][+-]?\d+)?[uU]?)
    |(?P<id>[_A-Za-z][_A-Za-z0-9]*)
    |(?P<op>==|!=|<=|>=|&&|\|\||[<>!()\[\].,{}+\-*/%?:])""",
    re.X | re.ASCII,
)
# ASCII digits only: Python's \d and int() also take other scripts' digits.
_DURATION = re.compile(r"(?:(\d{1,6})d)?(?:(\d{1,8})h)?(?:(\d{1,10})m)?(?:(\d{1,12})s)?", re.ASCII)
_RELATIONS = frozenset({"==", "!=", "<", "<=", ">", ">=", "in"})
_ORDERED = frozenset({"string", "number", "timestamp"})
_STRING_METHODS = frozenset({"startsWith", "endsWith", "contains"})
_METHODS = {"startsWith": 1, "endsWith": 1, "contains": 1, "size": 0, "add": 1, "subtract": 1}
_LITERALS = {"true": "bool", "false": "bool", "null": "null"}
_JSON_KINDS = {"string": "string", "integer": "number", "number": "number", "boolean": "bool"}
_JSON_KINDS |= {"array": "list", "object": "map", "null": "null"}


def error(code: Code, what: str, offset: int) -> ApiError:
    """A filter error whose message names the column of the character at `offset`."""
    return ApiError(code, f"Invalid filter at column {offset + 1}: {what}", param="filter")


def _kinds_text(kinds: frozenset[str]) -> str:
    return "of type " + " or ".join(sorted(kinds))


def parse_duration(text: str) -> timedelta | None:
    """`7d`, `12h`, `30m`, `45s` or a combination in that order (`1h30m`); None if malformed."""
    parts = _DURATION.fullmatch(text)
    if not text or parts is None:
        return None
    days, hours, minutes, seconds = (int(p or 0) for p in parts.groups())
    return timedelta(days=days, hours=hours, minutes=minutes, seconds=seconds)


def parse_timestamp(text: str) -> datetime | None:
    """An RFC 3339 date-time as an aware datetime; None if it is not one (offsets are
    -23:59..+23:59: tunnelgw.core.timefmt.parse_rfc3339)."""
    try:
        return timefmt.parse_rfc3339(text)
    except ValueError:
        return None


@dataclass
class _Tok:
    kind: str  # str, num, id, op, end
    text: str
    at: int


@dataclass
class _Val:
    """What the checker knows of a subexpression: its kinds and, for paths, the schema."""

    kinds: frozenset[str]
    start: int
    end: int
    elem: frozenset[str] = frozenset()
    schema: Mapping[str, Any] | None = None  # set on obj paths only
    path: tuple[str, ...] = ()
    const: datetime | None = None  # set on timestamp constants only
    text: str | None = None  # set on string literals only


def _resolve(schema: Mapping[str, Any], spec: Mapping[str, Any]) -> Mapping[str, Any]:
    for _ in range(32):
        ref = schema.get("$ref")
        if ref is None:
            return schema
        node: Any = spec
        for part in str(ref).removeprefix("#/").split("/"):
            key = part.replace("~1", "/").replace("~0", "~")
            node = node.get(key) if isinstance(node, Mapping) else None
        if not isinstance(node, Mapping):
            raise LookupError(f"the item schema's $ref {ref!r} is not in the spec")
        schema = node
    raise LookupError("the item schema's $refs go round in a loop")


def _members(schema: Mapping[str, Any], spec: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The schema and, recursively, its anyOf / oneOf / allOf members, resolved."""
    found = [schema := _resolve(schema, spec)]
    for key in ("anyOf", "oneOf", "allOf"):
        for member in schema.get(key, ()):
            found += _members(member, spec)
    return found


def _kinds(schema: Mapping[str, Any], spec: Mapping[str, Any]) -> frozenset[str]:
    kinds: set[str] = set()
    for node in _members(schema, spec):
        names = node.get("type", "object" if "properties" in node else [])
        for name in [names] if isinstance(names, str) else names:
            kind = _JSON_KINDS.get(name, "dyn")
            timestamp = kind == "string" and node.get("format") == "date-time"
            kinds.add("timestamp" if timestamp else kind)
        if node.get("nullable") is True:
            kinds.add("null")
    return frozenset(kinds or {"dyn"})


def _child(schema: Mapping[str, Any], name: str, spec: Mapping[str, Any]) -> Any:
    """The schema of field `name`; {} (anything) for free-form objects; None if there is none."""
    nodes = _members(schema, spec)
    for node in nodes:
        if name in node.get("properties", {}):
            return node["properties"][name]
    for node in nodes:
        extra = node.get("additionalProperties")
        if extra is not None and extra is not False:
            return extra if isinstance(extra, Mapping) else {}
    return None if any("properties" in node for node in nodes) else {}


def _tokens(text: str) -> list[_Tok]:
    found, pos = [], 0
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None or match.lastgroup == "raw":
            what = "raw and bytes literals are" if match else f"the character {text[pos]!r} is"
            raise error(Code.FILTER_SYNTAX, f"{what} not supported", pos)
        if match.lastgroup != "ws":
            found.append(_Tok(str(match.lastgroup), match.group(), pos))
        pos = match.end()
    return [*found, _Tok("end", "", len(text))]


_BOOL, _NUMBER, _STRING = frozenset({"bool"}), frozenset({"number"}), frozenset({"string"})
_TIMESTAMP, _LIST = frozenset({"timestamp"}), frozenset({"list"})
_SIZED = frozenset({"string", "list", "map"})


def _comparable(left: frozenset[str], right: frozenset[str]) -> bool:
    null = frozenset({"null"})
    return bool(left & right) or "dyn" in left | right or null in (left, right)


def _orderable(kinds: frozenset[str]) -> frozenset[str]:
    return _ORDERED if "dyn" in kinds else kinds & _ORDERED


class Checker:
    """Walks the tokens of an expression cel-rust accepted: subset, fields, types, rewrites.

    After `check()`, `paths` maps each obj path to its variable name and whether it holds a
    timestamp, `constants` maps names to precomputed timestamps and durations, and
    `rewritten()` is the program to run.
    """

    def __init__(
        self, text: str, schema: Mapping[str, Any], spec: Mapping[str, Any], now: datetime
    ) -> None:
        self.text, self.schema, self.spec, self.now = text, schema, spec, now
        self.toks, self.i, self.depth = _tokens(text), 0, 0
        self.paths: dict[tuple[str, ...], tuple[str, bool]] = {}
        self.constants: dict[str, Any] = {}
        self.rewrites: list[tuple[int, int, str]] = []

    def check(self) -> None:
        top = self.logical("||")
        if self.peek().kind != "end":
            raise self.unexpected(self.take())
        self.need(top, _BOOL, "the filter must be a condition")

    def rewritten(self) -> str:
        """The expression with paths and constants replaced by same-width variable names."""
        text = self.text
        for start, end, name in sorted(self.rewrites, reverse=True):
            text = text[:start] + name.ljust(end - start) + text[end:]
        return text

    # Tokens and errors.
    def peek(self, ahead: int = 0) -> _Tok:
        return self.toks[min(self.i + ahead, len(self.toks) - 1)]

    def take(self) -> _Tok:
        tok = self.peek()
        self.i = min(self.i + 1, len(self.toks) - 1)
        return tok

    def at(self, text: str, ahead: int = 0) -> bool:
        tok = self.peek(ahead)
        return tok.text == text and tok.kind in ("op", "id")

    def expect(self, text: str) -> int:
        tok = self.take()
        if tok.text != text or tok.kind != "op":
            raise self.unexpected(tok)
        return tok.at + 1

    def unexpected(self, tok: _Tok) -> ApiError:
        what = f"unexpected {tok.text!r}" if tok.kind != "end" else "unexpected end"
        if tok.text in ("+", "-", "*", "/", "%", "?", ":", "{"):
            what = f"{tok.text!r} is not supported in filters (no arithmetic, '?:' or maps)"
        return error(Code.FILTER_SYNTAX, what, tok.at)

    def name(self, val: _Val) -> str:
        if val.path:
            return "obj." + ".".join(val.path)
        return repr(self.text[val.start : val.end][:40])

    def need(self, val: _Val, kinds: frozenset[str], what: str) -> None:
        if not val.kinds & (kinds | {"dyn"}):
            found = _kinds_text(val.kinds)
            raise error(Code.FILTER_TYPE, f"{what}; {self.name(val)} is {found}", val.start)

    def enter(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise error(Code.FILTER_SYNTAX, "nested too deeply", self.peek().at)

    # The grammar: or := and ('||' and)*; and := rel ('&&' rel)*; rel := unary (RELOP unary)*.
    def logical(self, op: str) -> _Val:
        operand = self.conjunction if op == "||" else self.relation
        left = operand()
        while self.at(op):
            self.take()
            right = operand()
            for side in (left, right):
                self.need(side, _BOOL, f"{op!r} needs a condition on each side")
            left = _Val(_BOOL, left.start, right.end)
        return left

    def conjunction(self) -> _Val:
        return self.logical("&&")

    def relation(self) -> _Val:
        left = self.unary()
        while self.peek().text in _RELATIONS and self.peek().kind in ("op", "id"):
            op = self.take()
            right = self.unary()
            self.relate(op, left, right)
            left = _Val(_BOOL, left.start, right.end)
        return left

    def relate(self, op: _Tok, left: _Val, right: _Val) -> None:
        if op.text == "in":
            self.need(right, _LIST | {"map"}, "'in' needs a list on its right")
            inside = right.elem if "list" in right.kinds else _STRING
            ok = not inside or _comparable(left.kinds, inside)
        elif op.text in ("==", "!="):
            ok = _comparable(left.kinds, right.kinds)
        else:
            ok = bool(_orderable(left.kinds) & _orderable(right.kinds))
        if not ok:
            hint = ""
            if {"timestamp", "string"} <= left.kinds | right.kinds:
                hint = ' (write timestamp("2026-11-21T10:11:14Z") for a time)'
            what = f"{op.text!r} cannot compare {self.name(left)} ({_kinds_text(left.kinds)})"
            what += f" with {self.name(right)} ({_kinds_text(right.kinds)}){hint}"
            raise error(Code.FILTER_TYPE, what, op.at)

    def unary(self) -> _Val:
        first, nots = self.peek(), 0
        while self.at("!"):
            self.take()
            nots += 1
        if self.at("-") and self.peek(1).kind == "num":
            self.take()
            number = self.take()
            val = _Val(_NUMBER, first.at, number.at + len(number.text))
        else:
            val = self.member()
        if nots:
            self.need(val, _BOOL, "'!' needs a condition")
            val = _Val(_BOOL, first.at, val.end)
        return val

    # member := primary ('.' IDENT ('(' args ')')?)*; fields only on obj paths.
    def member(self) -> _Val:
        val = self.primary()
        while self.at(".") or self.at("["):
            dot = self.take()
            if dot.text == "[":
                what = "indexing with [] is not supported; select fields with '.'"
                raise error(Code.FILTER_SYNTAX, what, dot.at)
            name = self.take()
            if name.kind != "id":
                raise self.unexpected(name)
            if not self.at("("):
                val = self.select(val, name)
            elif name.text in ("add", "subtract") and val.const is not None:
                val = self.method(val, name, dot)
            else:
                val = self.method(self.finish(val), name, dot)
        return self.finish(val)

    def select(self, val: _Val, name: _Tok) -> _Val:
        if val.schema is None:
            what = "fields can only be read from obj, as in obj.name"
            raise error(Code.FILTER_SYNTAX, what, name.at)
        if not val.kinds & {"map", "dyn"}:
            found = _kinds_text(val.kinds)
            raise error(Code.FILTER_TYPE, f"{self.name(val)} is {found}, without fields", name.at)
        child = _child(val.schema, name.text, self.spec)
        if child is None:
            owner = f"{self.name(val)} has" if val.path else "the items have"
            raise error(Code.FILTER_UNKNOWN_FIELD, f"{owner} no field {name.text!r}", name.at)
        items = [node["items"] for node in _members(child, self.spec) if "items" in node]
        elem = frozenset().union(*(_kinds(schema, self.spec) for schema in items))
        end, path = name.at + len(name.text), (*val.path, name.text)
        return _Val(_kinds(child, self.spec), val.start, end, elem, child, path)

    def finish(self, val: _Val) -> _Val:
        """Replace a finished obj path or timestamp constant by a variable of the same width."""
        if val.schema is not None:
            if not val.path:
                raise error(Code.FILTER_SYNTAX, "select a field of obj, as in obj.id", val.start)
            name, _ = self.paths.setdefault(
                val.path, (f"_p{len(self.paths)}", "timestamp" in val.kinds)
            )
        elif val.const is not None:
            name = f"_k{len(self.constants)}"
            self.constants[name] = val.const
        else:
            return val
        if len(name) > val.end - val.start:
            raise error(Code.FILTER_SYNTAX, "too many fields", val.start)
        self.rewrites.append((val.start, val.end, name))
        return _Val(val.kinds, val.start, val.end, val.elem, path=val.path)

    def method(self, receiver: _Val, name: _Tok, dot: _Tok) -> _Val:
        method = name.text
        if method not in _METHODS:
            raise self.unsupported(name)
        args, end = self.arguments()
        if len(args) != _METHODS[method]:
            raise self.unsupported(name, len(args))
        if method in _STRING_METHODS:
            self.need(receiver, _STRING, f"{method}() needs a string")
            self.need(args[0], _STRING, f"{method}() takes a string")
            return _Val(_BOOL, receiver.start, end)
        if method == "size":
            self.need(receiver, _SIZED, "size() needs a string, a list or an object")
            return _Val(_NUMBER, receiver.start, end)
        self.need(receiver, _TIMESTAMP, f"{method}() needs a timestamp")
        delta = self.duration(args[0]) * (1 if method == "add" else -1)
        if receiver.const is None:  # `.add("1h")` becomes `+_d0`, a duration variable
            var = f"_d{len(self.constants)}"
            self.constants[var] = abs(delta)
            self.rewrites.append((dot.at, end, ("+" if method == "add" else "-") + var))
            return _Val(_TIMESTAMP, receiver.start, end)
        try:
            return _Val(_TIMESTAMP, receiver.start, end, const=receiver.const + delta)
        except OverflowError:
            raise error(Code.FILTER_SYNTAX, "the time is out of range", name.at) from None

    def unsupported(self, name: _Tok, count: int | None = None) -> ApiError:
        what = f"{name.text}() is not supported; filters have startsWith, endsWith, contains, "
        what += "size, timestamp, add and subtract"
        if count is not None:
            what = f"{name.text}() does not take {count} argument(s)"
        return error(Code.FILTER_SYNTAX, what, name.at)

    def literal(self, val: _Val, what: str) -> str:
        import cel

        if val.text is None:
            raise error(Code.FILTER_SYNTAX, f"{what} must be a string literal", val.start)
        value = cel.evaluate(val.text)
        return value if isinstance(value, str) else ""

    def duration(self, val: _Val) -> timedelta:
        delta = parse_duration(self.literal(val, "a duration"))
        if delta is None:
            what = "a duration is a string like 7d, 12h, 30m, 45s or 1h30m"
            raise error(Code.FILTER_SYNTAX, what, val.start)
        return delta

    def arguments(self, close: str = ")") -> tuple[list[_Val], int]:
        """The comma-separated expressions up to `close` (after the opening token)."""
        if close == ")":
            self.expect("(")
        self.enter()
        args: list[_Val] = []
        while not self.at(close):
            args.append(self.logical("||"))
            if not self.at(","):
                break
            self.take()
        self.depth -= 1
        return args, self.expect(close)

    # primary := literal | obj | NAME '(' args ')' | '(' or ')' | '[' args ']'
    def primary(self) -> _Val:
        tok = self.take()
        end = tok.at + len(tok.text)
        if tok.kind in ("str", "num"):
            kinds = _STRING if tok.kind == "str" else _NUMBER
            return _Val(kinds, tok.at, end, text=tok.text if tok.kind == "str" else None)
        if tok.kind == "id":
            return self.name_or_call(tok)
        if tok.text == "(" and tok.kind == "op":
            self.enter()
            inner = self.logical("||")
            self.depth -= 1
            return _Val(inner.kinds, tok.at, self.expect(")"), inner.elem)
        if tok.text == "[" and tok.kind == "op":
            items, end = self.arguments("]")
            return _Val(_LIST, tok.at, end, frozenset().union(*(v.kinds for v in items)))
        raise self.unexpected(tok)

    def name_or_call(self, tok: _Tok) -> _Val:
        end = tok.at + len(tok.text)
        if tok.text in _LITERALS and not self.at("("):
            return _Val(frozenset({_LITERALS[tok.text]}), tok.at, end)
        if tok.text == "timestamp" and self.at("("):
            return self.timestamp(tok)
        if tok.text == "size" and self.at("("):
            args, end = self.arguments()
            if len(args) != 1:
                raise self.unsupported(tok, len(args))
            self.need(args[0], _SIZED, "size() needs a string, a list or an object")
            return _Val(_NUMBER, tok.at, end)
        if self.at("("):
            raise self.unsupported(tok)
        if tok.text == "obj":
            return _Val(_kinds(self.schema, self.spec), tok.at, end, schema=self.schema)
        if tok.text == "time":
            what = "time.now is only supported as timestamp(time.now)"
            raise error(Code.FILTER_SYNTAX, what, tok.at)
        what = f"unknown name {tok.text!r}; fields are read from obj, as in obj.{tok.text}"
        raise error(Code.FILTER_UNKNOWN_FIELD, what, tok.at)

    def timestamp(self, tok: _Tok) -> _Val:
        if [t.text for t in self.toks[self.i : self.i + 5]] == ["(", "time", ".", "now", ")"]:
            self.i += 5
            return _Val(_TIMESTAMP, tok.at, self.toks[self.i - 1].at + 1, const=self.now)
        args, end = self.arguments()
        if len(args) != 1:
            raise self.unsupported(tok, len(args))
        if args[0].text is None:
            self.need(args[0], _STRING | _TIMESTAMP, "timestamp() takes an RFC 3339 string")
            return _Val(_TIMESTAMP, tok.at, end)
        when = parse_timestamp(self.literal(args[0], "a timestamp"))
        if when is None:
            what = "a timestamp is an RFC 3339 string, as in 2026-11-21T10:11:14Z"
            raise error(Code.FILTER_SYNTAX, what, args[0].start)
        return _Val(_TIMESTAMP, tok.at, end, const=when)
