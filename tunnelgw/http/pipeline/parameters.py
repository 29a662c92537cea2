"""Parameters of one operation: the path and query parameters, checked against their schemas
and coerced once per request into the handler's keyword arguments, and the version header."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote_plus

from connexion.operations import AbstractOperation
from starlette.types import Scope

from tunnelgw.core.errors import ApiError, Code
from tunnelgw.http.validation import Compiled

VERSION_HEADER = "Service-Version"
SUPPORTED_VERSION = "2"
INTEGER = re.compile(r"-?[0-9]{1,18}")  # ASCII digits only (int() takes far more)
_MISSING = object()


@dataclass(frozen=True)
class Param:
    """One declared parameter, with what validating and passing it needs."""

    name: str
    location: str  # query or path (the one header, the version, is checked on its own)
    required: bool
    default: Any
    kind: str  # the schema's type: integer, string, array, ...
    item_kind: str
    explode: bool
    validator: Compiled
    argument: bool  # the handler takes it
    alias_of: str | None  # another parameter this one names as well (`x-alias-of`)

    def coerce(self, raw: str) -> Any:
        kind = self.item_kind if self.kind == "array" else self.kind
        if kind == "integer":
            if not INTEGER.fullmatch(raw):
                context = {"reason": "not_a_number", "value": raw[:32]}
                raise _invalid(self, f"{raw[:32]!r} is not an integer (ASCII digits).", context)
            return int(raw)
        if kind == "boolean":
            if raw not in ("true", "false"):
                raise _invalid(self, f"{raw[:32]!r} is not a boolean (true or false).")
            return raw == "true"
        return raw

    def check(self, value: Any) -> None:
        validator = self.validator.get()
        if not validator.is_valid(value):
            error = next(iter(validator.iter_errors(value)))
            raise _invalid(self, str(error.message), {"value": str(value)[:32]})


def _invalid(param: Param, message: str, context: dict[str, str] | None = None) -> ApiError:
    return ApiError(
        Code.INVALID_PARAMETER, f"{param.name}: {message}", context=context, param=param.name
    )


_KINDS = {"string", "integer", "boolean", "array"}


def _param(spec: dict[str, Any], arguments: set[str], has_kwargs: bool) -> Param:
    schema = spec.get("schema", {})
    kind = schema.get("type", "string")
    if spec["in"] not in ("query", "path") or kind not in _KINDS:
        raise NotImplementedError(f"parameter {spec['name']!r}: {spec['in']} {kind} unsupported")
    return Param(
        name=spec["name"],
        location=spec["in"],
        required=bool(spec.get("required")),
        default=schema.get("default", _MISSING),
        kind=kind,
        item_kind=schema.get("items", {}).get("type", "string") if kind == "array" else kind,
        explode=spec.get("explode", spec.get("style", "form") == "form"),
        validator=Compiled(schema, formats=True),
        argument=spec.get("x-alias-of") is None and (has_kwargs or spec["name"] in arguments),
        alias_of=spec.get("x-alias-of"),
    )


class Parameters:
    """The declared path and query parameters of one operation, and which the handler takes
    (`arguments`; all of them when it takes `**kwargs`). An alias (`x-alias-of`) is checked
    like any parameter and passed under the name it stands for, unless that one is sent too."""

    def __init__(self, operation: AbstractOperation, arguments: set[str], has_kwargs: bool) -> None:
        specs = [p for p in operation.parameters if p["name"] != VERSION_HEADER]
        self.params = {p["name"]: _param(p, arguments, has_kwargs) for p in specs}
        self.query = {n: p for n, p in self.params.items() if p.location == "query"}
        self.aliases = [p for p in self.query.values() if p.alias_of is not None]
        self.path = [p for p in self.params.values() if p.location == "path"]

    def path_values(self, scope: Scope) -> dict[str, Any] | ApiError:
        """Each path parameter's checked value, or the error of the first that fails."""
        values: dict[str, Any] = {}
        given = scope.get("path_params", {})
        try:
            for param in self.path:
                value = param.coerce(str(given.get(param.name, "")))
                param.check(value)
                values[param.name] = value
        except ApiError as exc:
            return exc
        return values

    def arguments(self, scope: Scope, path: dict[str, Any]) -> dict[str, Any]:
        kwargs = {p.name: path[p.name] for p in self.path if p.argument}
        query_string = scope.get("query_string", b"")
        given = self._query(query_string) if query_string else {}
        for name, param in self.query.items():
            values = given.get(name)
            if values is None:
                if param.required:
                    raise ApiError(Code.MISSING_PARAMETER, f"{name} is required.", param=param.name)
                if param.default is not _MISSING and param.argument:
                    kwargs[name] = param.default
                continue
            value = self._query_value(param, values)
            param.check(value)
            if param.argument:
                kwargs[name] = value
        for param in self.aliases:  # the parameter an alias names wins when both are sent
            if param.name in given and param.alias_of not in given:
                target = self.params[param.alias_of]
                if target.argument:
                    kwargs[target.name] = self._query_value(param, given[param.name])
        return kwargs

    def _query(self, query_string: bytes) -> dict[str, list[str]]:
        """Each query parameter's values as sent, still percent-encoded (`_query_value`
        decodes them: a non-exploded array splits on its literal commas first, so an encoded
        `%2C` stays inside its item)."""
        given: dict[str, list[str]] = {}
        for pair in query_string.decode("latin-1").split("&"):
            if not pair:
                continue
            raw_name, _, value = pair.partition("=")
            name = _unquote(raw_name)
            if name not in self.query:
                raise ApiError(
                    Code.INVALID_PARAMETER,
                    f"Unknown query parameter {name[:64]!r}; this operation takes "
                    f"{', '.join(sorted(self.query)) or 'none'}.",
                    context={"reason": "unknown", "supported": ", ".join(sorted(self.query))},
                    param=name[:64],
                )
            given.setdefault(name, []).append(value)
        return given

    @staticmethod
    def _query_value(param: Param, values: list[str]) -> Any:
        if param.kind == "array":
            parts = values if param.explode else [p for v in values for p in v.split(",")]
            return [param.coerce(_unquote(part)) for part in parts]
        if len(values) > 1:
            shown = ", ".join(_unquote(v)[:32] for v in values[:5])
            context = {"reason": "repeated", "count": str(len(values)), "values": shown}
            raise _invalid(param, "given more than once.", context)
        return param.coerce(_unquote(values[0]))


def _unquote(text: str) -> str:
    """A query component decoded as `parse_qsl` decodes it (`+` is a space, UTF-8)."""
    return unquote_plus(text, encoding="utf-8", errors="replace")


def check_version(headers: list[tuple[bytes, bytes]], names: tuple[bytes, ...]) -> None:
    """The `Service-Version: 2` rule (under any of `names`); ApiError(400) otherwise."""
    for key, raw in headers:
        if key in names:
            value = raw.decode("latin-1")
            if value.strip() != SUPPORTED_VERSION:
                sent = key.decode("latin-1")
                raise ApiError(
                    Code.VERSION_UNSUPPORTED,
                    f"{sent} {value[:20]!r} is not supported; "
                    f"send '{VERSION_HEADER}: {SUPPORTED_VERSION}'.",
                    context={"version": value[:20]},
                    param=VERSION_HEADER,
                )
            return
    raise _version_missing(headers)


def _version_missing(headers: list[tuple[bytes, bytes]]) -> ApiError:
    """The 400 for a request without the version header; when it sends another `*-Version`
    header (a client library naming the header its own way), the message names that header
    and the setting that accepts it."""
    others = sorted({key.decode("latin-1") for key, _ in headers if key.endswith(b"-version")})
    if not others:
        return ApiError(Code.VERSION_HEADER_MISSING, param=VERSION_HEADER)
    name = others[0][:64]
    return ApiError(
        Code.VERSION_HEADER_MISSING,
        f"No {VERSION_HEADER} header; the request sends {name!r} instead. Send "
        f"'{VERSION_HEADER}: {SUPPORTED_VERSION}', or accept {name!r} in its place by "
        f"starting the server with TUNNELGW_VERSION_HEADER_ALIASES={name} "
        f"(tunnelgw serve --version-header-alias {name}).",
        param=VERSION_HEADER,
    )


def header(headers: list[tuple[bytes, bytes]], name: bytes) -> str | None:
    for key, value in headers:
        if key == name:
            return value.decode("latin-1")
    return None
