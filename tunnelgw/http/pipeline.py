"""The per-operation pipeline: security, request validation, the handler and response
validation of every spec operation, in one layer built once per operation at start-up.

`OperationMiddleware` sits in Connexion's middleware list after Connexion's RoutingMiddleware
(which routes each request to its operationId) and is itself a Connexion `RoutedMiddleware`:
Connexion parses the spec, resolves every operationId to its handler (RelativeResolver) and
hands each parsed operation to `Operation`. The layer does what Connexion's Security,
RequestValidation, ResponseValidation and Context middlewares and the AsyncApp's parameter
and response decorators do, against the same `openapi.yaml`, but everything that does not
depend on the request is made once: the security check, the parameter plan with compiled
validators, the body validators, the handler's argument names, and one compiled response
validator per status. Connexion's stock layers rebuild most of that on every request and
routed the request once per layer; together they cost more than the whole request does now
(bench/README.md).

Order of checks, each failing with the catalog error: body size (413), version header (400),
credentials (401), parameters (400), content type (415), body (400); then the handler, whose
result must match the operation's response schema for its status (else a logged 500).
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, NoReturn
from urllib.parse import unquote_plus

import jsonschema_rs
import orjson
from connexion.middleware.abstract import RoutedAPI, RoutedMiddleware
from connexion.operations import AbstractOperation
from connexion.utils import get_function_from_name
from jsonschema.exceptions import best_match
from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Receive, Scope, Send

from tunnelgw.core.errors import ApiError, Code
from tunnelgw.http import validation
from tunnelgw.services import auth, faults, rendercache
from tunnelgw.storage import db

VERSION_HEADER = "Service-Version"
HANDLERS_PACKAGE = "handlers"  # operationIds resolve relative to it (tunnelgw.http.app)
SUPPORTED_VERSION = "2"
JSON = "application/json"
_INTEGER = re.compile(r"-?[0-9]{1,18}")  # ASCII digits only (int() takes far more)
_MISSING = object()

# The request body as sent (for handlers that report positions in it: the admin fixtures).
raw_body: ContextVar[bytes] = ContextVar("tunnelgw_raw_body", default=b"")
# A scope key the fixture loader's in-process requests carry: fault rules leave them alone.
INTERNAL = "tunnelgw.internal"


class Compiled:
    """The jsonschema-rs validator of an OpenAPI schema, compiled at its first use (start-up
    stays short, and operations nobody calls cost no memory); then reused."""

    __slots__ = ("_validator", "formats", "schema")

    def __init__(self, schema: dict[str, Any], *, formats: bool) -> None:
        self.schema = schema
        self.formats = formats
        self._validator: Any = None

    def get(self) -> Any:
        validator = self._validator
        if validator is None:
            validator = self._validator = jsonschema_rs.Draft4Validator(
                validation.to_json_schema(self.schema), validate_formats=self.formats
            )
        return validator


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
            if not _INTEGER.fullmatch(raw):
                raise _invalid(self, f"{raw[:32]!r} is not an integer (ASCII digits).")
            return int(raw)
        return raw

    def check(self, value: Any) -> None:
        validator = self.validator.get()
        if not validator.is_valid(value):
            error = next(iter(validator.iter_errors(value)))
            raise _invalid(self, str(error.message))


def _invalid(param: Param, message: str) -> ApiError:
    return ApiError(Code.INVALID_PARAMETER, f"{param.name}: {message}", param=param.name)


_KINDS = {"string", "integer", "array"}


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


class Operation:
    """One spec operation, ready to serve (see the module docstring)."""

    def __init__(
        self,
        operation: AbstractOperation,
        *,
        validate_responses: bool,
        max_body_bytes: int,
        version_headers: tuple[str, ...],
        fault_operations: frozenset[str] = frozenset(),
    ) -> None:
        self.operation_id = operation.operation_id
        # The spec's operationId (Connexion's is the resolved handler, `handlers.<id>`).
        self.spec_operation_id = operation.operation_id.removeprefix(HANDLERS_PACKAGE + ".")
        # Fault rules (admin API on) may hit this operation.
        self.faults = self.spec_operation_id in fault_operations
        self.handler = operation.function
        signature = inspect.signature(self.handler)
        arguments = set(signature.parameters)
        has_kwargs = any(p.kind is p.VAR_KEYWORD for p in signature.parameters.values())
        specs = [p for p in operation.parameters if p["name"] != VERSION_HEADER]
        self.params = {p["name"]: _param(p, arguments, has_kwargs) for p in specs}
        self.query = {n: p for n, p in self.params.items() if p.location == "query"}
        self.aliases = [p for p in self.query.values() if p.alias_of is not None]
        self.path = [p for p in self.params.values() if p.location == "path"]
        versioned = any(p["name"] == VERSION_HEADER for p in operation.parameters)
        self.version_headers = tuple(h.lower().encode("latin-1") for h in version_headers)
        self.versioned = versioned
        self.authenticate = _security(operation)
        self.row = _row_target(operation, self.path)
        self.max_body_bytes = max_body_bytes
        self.body = _Body(operation) if operation.request_body else None
        # Body fields that repeat a path parameter (`x-path-param`), as client libraries send.
        self.echoes = _path_echoes(self.body.schema) if self.body is not None else ()
        self.takes_body = self.body is not None and (has_kwargs or "body" in arguments)
        self.responses = _Responses(operation) if validate_responses else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers: list[tuple[bytes, bytes]] = scope["headers"]
        length = _header(headers, b"content-length")
        if length is not None and _INTEGER.fullmatch(length) and int(length) > self.max_body_bytes:
            raise body_too_large(self.max_body_bytes)
        if self.versioned:
            _check_version(headers, self.version_headers)
        path = self._path_values(scope)
        async with db.request_scope():
            if self.authenticate is not None:
                info = await self.authenticate(headers, self._row(path))
                auth.activate(info["caller"])
            if isinstance(path, ApiError):  # reported after the credential check
                raise path
            kwargs = self._arguments(scope, path)
            if self.body is not None:
                body = await self.body.read(scope, headers, receive, self.max_body_bytes)
                if self.echoes and body is not None:
                    _check_echoes(body, scope.get("path_params", {}), self.echoes)
                if self.takes_body:
                    kwargs["body"] = body
            if self.faults and not scope.get(INTERNAL):
                await faults.apply(auth.caller().account_id, self.spec_operation_id)
            result = await self.handler(**kwargs)
        await self._respond(result, send)

    def _path_values(self, scope: Scope) -> dict[str, Any] | ApiError:
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

    def _row(self, path: dict[str, Any] | ApiError) -> tuple[str, str] | None:
        """(collection, id) of the resource this GET reads, for the credential check to read
        along (`_row_target`); None for other operations and for an invalid id."""
        if self.row is None or isinstance(path, ApiError):
            return None
        collection, param = self.row
        value = path[param.name]
        return (collection, value) if isinstance(value, str) else None

    def _arguments(self, scope: Scope, path: dict[str, Any]) -> dict[str, Any]:
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
            raise _invalid(param, "given more than once.")
        return param.coerce(_unquote(values[0]))

    async def _respond(self, result: Any, send: Send) -> None:
        status = 200
        if isinstance(result, tuple):
            result, status = result
        if hasattr(result, "status_code") and hasattr(result, "body"):  # a ready response
            await _send(send, result.status_code, result.body, result.content_type)
            return
        if isinstance(result, rendercache.Page):
            plan = self.responses.page_plan(status, result.key) if self.responses else None
            if plan is not None:
                await _send(send, status, plan.render(result), JSON)
                return
            result = result.as_dict()
        if self.responses is not None:
            self.responses.check(status, result)
        if result is None:
            await _send(send, status, b"", None)
            return
        await _send(send, status, orjson.dumps(result), JSON)


def _unquote(text: str) -> str:
    """A query component decoded as `parse_qsl` decodes it (`+` is a space, UTF-8)."""
    return unquote_plus(text, encoding="utf-8", errors="replace")


def _path_echoes(schema: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    """(body field, path parameter) of each top-level property marked `x-path-param`."""
    return tuple(
        (name, prop["x-path-param"])
        for name, prop in schema.get("properties", {}).items()
        if isinstance(prop, dict) and "x-path-param" in prop
    )


def _check_echoes(
    body: dict[str, Any], path: dict[str, Any], echoes: tuple[tuple[str, str], ...]
) -> None:
    """Each body field that repeats a path parameter must equal it (absent or null: unset);
    ApiError(400 ERR_INVALID_FIELD) otherwise. The field is removed: the handler reads the
    path."""
    for name, param in echoes:
        value = body.pop(name, None)
        if value is not None and value != path.get(param):
            raise ApiError(
                Code.INVALID_FIELD,
                f"{name} {str(value)[:64]!r} contradicts the path's {param} "
                f"{str(path.get(param))[:64]!r}; send the same value or leave it out.",
                field=name,
            )


async def _send(send: Send, status: int, body: bytes, content_type: str | None) -> None:
    headers = [(b"content-length", str(len(body)).encode())]
    if content_type is not None:
        headers.append((b"content-type", content_type.encode("latin-1")))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _check_version(headers: list[tuple[bytes, bytes]], names: tuple[bytes, ...]) -> None:
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


def _header(headers: list[tuple[bytes, bytes]], name: bytes) -> str | None:
    for key, value in headers:
        if key == name:
            return value.decode("latin-1")
    return None


def body_too_large(limit: int) -> ApiError:
    return ApiError(
        Code.BODY_TOO_LARGE, f"The request body is larger than {limit} bytes.", limit=str(limit)
    )


# --- security -----------------------------------------------------------------------------


def _row_target(operation: AbstractOperation, path: list[Param]) -> tuple[str, Param] | None:
    """For a GET of `<collection>/{id}` (one resource by its id): the collection path and the
    id parameter. The credential check is then given the id, so that it can read the
    resource in the same statement as the key (tunnelgw.services.auth.bearer_info)."""
    if operation.method.lower() != "get" or len(path) != 1:
        return None
    collection, _, last = operation.path.rpartition("/")
    if last != "{" + path[0].name + "}" or "{" in collection or not collection:
        return None
    return collection, path[0]


# x-bearerInfoFunc: (token, the (collection, id) a GET of one resource reads, or None).
BearerInfo = Callable[[str, tuple[str, str] | None], Awaitable[dict[str, Any]]]
Authenticate = Callable[[list[tuple[bytes, bytes]], tuple[str, str] | None], Awaitable[Any]]


def _security(operation: AbstractOperation) -> Authenticate | None:
    """The credential check of `operation` (HTTP bearer with `x-bearerInfoFunc`, the only
    scheme the spec uses), or None for operations without security."""
    requirements = [r for r in (operation.security or []) if r]
    if not requirements:
        return None
    if len(requirements) != 1 or len(requirements[0]) != 1:
        raise NotImplementedError(f"{operation.operation_id}: one security scheme expected")
    (scheme_name,) = requirements[0]
    scheme = operation.security_schemes[scheme_name]
    if scheme.get("type") != "http" or scheme.get("scheme", "").lower() != "bearer":
        raise NotImplementedError(f"{operation.operation_id}: only HTTP bearer is supported")
    bearer_info: BearerInfo = get_function_from_name(scheme["x-bearerInfoFunc"])

    async def authenticate(
        headers: list[tuple[bytes, bytes]], row: tuple[str, str] | None = None
    ) -> dict[str, Any]:
        header = _header(headers, b"authorization")
        if header is None:
            raise ApiError(Code.AUTHENTICATION_REQUIRED)
        kind, _, token = header.partition(" ")
        if kind.lower() != "bearer" or not token.strip():
            raise ApiError(Code.INVALID_CREDENTIALS)
        return await bearer_info(token.strip(), row)

    return authenticate


# --- bodies -------------------------------------------------------------------------------


class _Body:
    """Reading and validating the JSON request body of one operation."""

    def __init__(self, operation: AbstractOperation) -> None:
        self.consumes = [c.lower() for c in operation.consumes]
        self.required = bool(operation.request_body.get("required", False))
        self.schema = operation.body_schema(JSON)
        # Formats unchecked, as Python jsonschema checks none of those the spec uses.
        self.fast = Compiled(self.schema, formats=False)

    async def read(
        self, scope: Scope, headers: list[tuple[bytes, bytes]], receive: Receive, limit: int
    ) -> Any:
        content_type = _header(headers, b"content-type")
        mime = (content_type or JSON).partition(";")[0].strip().lower()
        if mime not in self.consumes:
            raise ApiError(
                Code.UNSUPPORTED_MEDIA_TYPE,
                f"Content-Type {mime[:64]!r} is not supported; send {', '.join(self.consumes)}.",
            )
        raw = await _receive_all(receive, limit)
        raw_body.set(raw)
        if not raw:
            if self.required:
                raise ApiError(Code.INVALID_BODY, "This operation needs a JSON object body.")
            return None
        body = validation.loads_strict(raw)
        if body is None:
            raise ApiError(Code.INVALID_BODY, "The request body must be a JSON object, not null.")
        if not self.fast.get().is_valid(body):
            raise self._error(body)
        validation.check_extensions(self.schema, body)
        return body

    def _error(self, body: Any) -> ApiError:
        error = best_match(validation.request_validator(self.schema).iter_errors(body))
        if error is not None:
            return validation.schema_error(error)
        # jsonschema-rs is the authority; name what it found.
        found = next(iter(self.fast.get().iter_errors(body)))
        field = ".".join(str(part) for part in found.instance_path)
        if not field:
            return ApiError(Code.INVALID_BODY, f"The request body is invalid: {found.message}")
        return ApiError(Code.INVALID_FIELD, f"{field}: {found.message}.", field=field)


async def _receive_all(receive: Receive, limit: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ClientDisconnect()
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise body_too_large(limit)
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


# --- responses ----------------------------------------------------------------------------


class _Responses:
    """The compiled response validator of each status an operation documents, and for list
    pages rendered through tunnelgw.services.rendercache, the validators of their envelope and items."""

    def __init__(self, operation: AbstractOperation) -> None:
        self.operation_id = operation.operation_id
        self.validators: dict[int, Compiled | None] = {}
        for status in operation.responses:
            if status.isdigit():
                schema = operation.response_schema(status, JSON)
                self.validators[int(status)] = Compiled(schema, formats=True) if schema else None
        self.documented = set(self.validators)
        self._pages: dict[tuple[int, str], _PagePlan | None] = {}

    def page_plan(self, status: int, key: str) -> _PagePlan | None:
        """How to validate a `Page` with items under `key` by parts for `status`; None when
        the response schema does not allow it (the page is then rendered and checked whole)."""
        if (status, key) not in self._pages:
            compiled = self.validators.get(status)
            plan = _PagePlan.of(compiled.schema, key) if compiled is not None else None
            self._pages[(status, key)] = plan
        return self._pages[(status, key)]

    def check(self, status: int, body: Any) -> None:
        if status not in self.documented:
            raise validation.nonconforming(f"status {status} is not documented")
        compiled = self.validators[status]
        if compiled is None:
            if body is not None:
                raise validation.nonconforming(f"status {status} documents no body")
            return
        validator = compiled.get()
        if validator.is_valid(body):
            return
        _nonconforming(validator, body, "")


def _nonconforming(validator: Any, body: Any, prefix: str) -> NoReturn:
    error = next(iter(validator.iter_errors(body)))
    path = "/".join(str(part) for part in error.instance_path)
    raise validation.nonconforming(f"at /{prefix}{path}: {error.message}")


class _PagePlan:
    """A list response schema split in two, for pages rendered through the render cache
    (tunnelgw.services.rendercache): the envelope with the items of the array `key` unconstrained, and
    the item schema. Both are compiled from the operation's response schema, as `check` is."""

    __slots__ = ("envelope", "item", "key")

    def __init__(self, key: str, envelope: Compiled, item: Compiled) -> None:
        self.key = key
        self.envelope = envelope
        self.item = item

    @classmethod
    def of(cls, schema: dict[str, Any], key: str) -> _PagePlan | None:
        """The plan of `schema`; None unless it is an object whose property `key` is an array
        with an `items` schema."""
        properties = schema.get("properties")
        prop = properties.get(key) if isinstance(properties, dict) else None
        if (
            schema.get("type") != "object"
            or not isinstance(properties, dict)
            or not isinstance(prop, dict)
            or prop.get("type") != "array"
            or not isinstance(prop.get("items"), dict)
        ):
            return None
        envelope = {**schema, "properties": {**properties, key: {**prop, "items": {}}}}
        item = prop["items"]
        if "components" in schema and "components" not in item:  # where "$ref"s resolve
            item = {**item, "components": schema["components"]}
        return cls(key, Compiled(envelope, formats=True), Compiled(item, formats=True))

    def render(self, page: rendercache.Page) -> bytes:
        """The body of `page`: its items through the render cache, each new rendering checked
        against the item schema, and the envelope checked against the response schema with the
        items left to that check. Every byte sent has been validated."""
        item_validator = self.item.get()
        key = self.key

        def check(item: dict[str, Any], index: int) -> None:
            if not item_validator.is_valid(item):
                _nonconforming(item_validator, item, f"{key}/{index}/")

        items = page.items(check, self.item)
        body = page.envelope(items)
        shape = {**body, key: [None] * len(items)}  # the items were checked one by one
        validator = self.envelope.get()
        if not validator.is_valid(shape):
            _nonconforming(validator, shape, "")
        return orjson.dumps(body)


# --- Connexion plumbing -------------------------------------------------------------------


class OperationAPI(RoutedAPI[Operation]):  # type: ignore[misc]
    """The operations of one spec (Connexion registers each API on each middleware)."""

    def __init__(
        self,
        *args: Any,
        validate_responses: bool = True,
        max_body_bytes: int,
        version_headers: tuple[str, ...] = (VERSION_HEADER,),
        fault_operations: frozenset[str] = frozenset(),
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self._options = {
            "validate_responses": bool(validate_responses),
            "max_body_bytes": max_body_bytes,
            "version_headers": version_headers,
            "fault_operations": fault_operations,
        }
        self.add_paths()

    def make_operation(self, operation: AbstractOperation) -> Operation:
        return Operation(operation, **self._options)  # type: ignore[arg-type]


class OperationMiddleware(RoutedMiddleware[OperationAPI]):  # type: ignore[misc]
    """Serves every routed spec operation (Connexion's RoutingMiddleware names it)."""

    api_cls = OperationAPI

    def __init__(self, app: ASGIApp, **options: Any) -> None:
        super().__init__(app)
        self._options = options

    def add_api(self, specification: Any, **kwargs: Any) -> OperationAPI:
        api: OperationAPI = super().add_api(specification, **{**kwargs, **self._options})
        return api
