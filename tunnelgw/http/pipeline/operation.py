"""One spec operation served end to end (`Operation`), and the Connexion middleware that
serves every routed operation with one (`OperationMiddleware`); the steps are the modules
beside this one (parameters, security, bodies, responses)."""

from __future__ import annotations

import inspect
import logging
import time
from datetime import UTC, datetime
from typing import Any

import orjson
from connexion.middleware.abstract import RoutedAPI, RoutedMiddleware
from connexion.operations import AbstractOperation
from starlette.types import ASGIApp, Receive, Scope, Send

from tunnelgw.core import scopes, timefmt
from tunnelgw.core.errors import ApiError, Code
from tunnelgw.http import metrics, rendering, routing
from tunnelgw.http.middleware import operation_id
from tunnelgw.http.pipeline import bodies, parameters, security
from tunnelgw.http.pipeline.bodies import JSON, Body
from tunnelgw.http.pipeline.parameters import INTEGER, VERSION_HEADER, Parameters, header
from tunnelgw.http.pipeline.responses import Responses, send_response
from tunnelgw.rules import cidrs
from tunnelgw.services import auth, events, faults, journal, rendercache, restrictions
from tunnelgw.storage import db

log = logging.getLogger("tunnelgw.restrictions")

HANDLERS_PACKAGE = "tunnelgw.handlers"  # operationIds resolve relative to it (tunnelgw.http.app)
# A scope key the fixture loader's in-process requests carry: fault rules leave them alone.
INTERNAL = "tunnelgw.internal"
ADMIN_OPERATIONS = "admin."  # the admin API's operationIds (handlers/admin.py)
# Scope keys a journaled request carries from its checks to its journal entry.
CALLER = "tunnelgw.caller"
RAW_BODY = "tunnelgw.raw_body"


class Operation:
    """One spec operation, ready to serve (see tunnelgw.http.pipeline)."""

    def __init__(
        self,
        operation: AbstractOperation,
        *,
        validate_responses: bool,
        max_body_bytes: int,
        version_headers: tuple[str, ...],
        fault_operations: frozenset[str] = frozenset(),
        trusted_proxies: tuple[cidrs.Network, ...] = (),
        journal_keep: int = 0,
    ) -> None:
        self.operation_id = operation.operation_id
        # The spec's operationId (Connexion's is the resolved handler, `tunnelgw.handlers.<id>`).
        self.spec_operation_id = operation.operation_id.removeprefix(HANDLERS_PACKAGE + ".")
        # Fault rules (admin API on) may hit this operation.
        self.faults = self.spec_operation_id in fault_operations
        # `api` IP restrictions apply to every API operation but the admin API's, so a test
        # suite can always undo one.
        self.restrictable = not self.spec_operation_id.startswith(ADMIN_OPERATIONS)
        self.trusted_proxies = trusted_proxies
        self.handler = operation.function
        signature = inspect.signature(self.handler)
        arguments = set(signature.parameters)
        has_kwargs = any(p.kind is p.VAR_KEYWORD for p in signature.parameters.values())
        self.parameters = Parameters(operation, arguments, has_kwargs)
        self.versioned = any(p["name"] == VERSION_HEADER for p in operation.parameters)
        self.version_headers = tuple(h.lower().encode("latin-1") for h in version_headers)
        self.authenticate = security.credential_check(operation)
        # The scope an access token needs for this operation (tunnelgw.core.scopes; an
        # authenticated operation the table lacks is refused to every access token).
        self.scope = scopes.required(self.spec_operation_id)
        if self.authenticate is not None and self.scope is None:
            self.scope = scopes.ADMIN_ONLY
        self.row = security.row_target(operation, self.parameters.path)
        self.max_body_bytes = max_body_bytes
        self.body = Body(operation) if operation.request_body else None
        # Body fields that repeat a path parameter (`x-path-param`), as client libraries send.
        self.echoes = bodies.path_echoes(self.body.schema) if self.body is not None else ()
        self.takes_body = self.body is not None and (has_kwargs or "body" in arguments)
        # What the pipeline knows, passed to a handler that names it: the authenticated
        # caller (with the row its credential check read along) and the body as sent.
        self.takes_caller = "caller" in arguments
        self.takes_raw_body = "raw_body" in arguments
        self.responses = Responses(operation) if validate_responses else None
        # The request journal (admin API on): the account's API requests, not the admin API's.
        journaled = journal_keep > 0 and self.authenticate is not None and self.restrictable
        self.journal_keep = journal_keep if journaled else 0
        self.secrets = journal.secret_paths(self.body.schema if self.body else None)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not self.journal_keep or scope.get(INTERNAL):
            await self._respond(await self._handle(scope, receive), send)
            return
        started = time.perf_counter()
        arrived = datetime.now(UTC)
        failure: Exception | None = None
        try:
            result = await self._handle(scope, receive)
        except Exception as exc:
            failure, result = exc, rendering.to_api_error(exc)
        entry = self._entry(scope, arrived, started, result)
        if entry is not None:  # committed before the answer is sent
            await journal.journal(db.current(), self.journal_keep).record(entry)
        if failure is not None:
            raise failure
        await self._respond(result, send)

    async def _handle(self, scope: Scope, receive: Receive) -> Any:
        """The request's checks and its handler: what the handler returned."""
        headers: list[tuple[bytes, bytes]] = scope["headers"]
        length = header(headers, b"content-length")
        if length is not None and INTEGER.fullmatch(length) and int(length) > self.max_body_bytes:
            raise bodies.body_too_large(self.max_body_bytes)
        if self.versioned:
            parameters.check_version(headers, self.version_headers)
        path = self.parameters.path_values(scope)
        # The body is in before the request takes a database connection: a client that
        # uploads slowly holds a socket, never a connection of the pool.
        raw = b""
        if self.body is not None:
            raw = await bodies.receive_body(receive, self.max_body_bytes)
            scope[RAW_BODY] = raw
        async with db.request_scope():
            caller: auth.Caller | None = None
            if self.authenticate is not None:
                info = await self.authenticate(headers, self._row(path))
                # None: the operator's token (the account operations), no account's caller.
                caller = info["caller"]
                if caller is not None:
                    scope[CALLER] = caller
                    events.known(caller)
                    if caller.scopes is not None:
                        self._check_scope(caller)
                    if caller.api_restriction and self.restrictable:
                        await self._check_ip_restrictions(scope, caller)
            if isinstance(path, ApiError):  # reported after the credential check
                raise path
            kwargs = self.parameters.arguments(scope, path)
            if self.body is not None:
                body = await self.body.parse(headers, raw)
                if self.echoes and body is not None:
                    bodies.check_echoes(body, scope.get("path_params", {}), self.echoes)
                if self.takes_body:
                    kwargs["body"] = body
            if self.takes_caller:
                kwargs["caller"] = caller
            if self.takes_raw_body:
                kwargs["raw_body"] = raw
            if (
                self.faults
                and caller is not None
                and caller.fault_rules
                and not scope.get(INTERNAL)
            ):
                await faults.apply(caller.account_id, self.spec_operation_id)
            return await self.handler(**kwargs)

    def _check_scope(self, caller: auth.Caller) -> None:
        """ApiError(403) unless the caller's access token holds the operation's scope."""
        if self.scope == scopes.ADMIN_ONLY:
            raise ApiError(
                Code.PERMISSION_DENIED,
                f"{self.spec_operation_id} is not open to access tokens: the admin API "
                "takes an API key.",
                access_token_id=caller.access_token_id or "",
            )
        if self.scope is not None and not caller.may(self.scope):
            raise ApiError(
                Code.SCOPE_REQUIRED,
                f"The access token {caller.access_token_id!r} does not have the "
                f"{self.scope!r} scope that {self.spec_operation_id} needs; its owner can add "
                "it (PATCH /access_tokens/{id}), or use a token that has it.",
                scope=self.scope,
                access_token_id=caller.access_token_id or "",
                context={"scope": self.scope},
            )

    async def _check_ip_restrictions(self, scope: Scope, caller: auth.Caller) -> None:
        """The account's `api` IP restrictions on the client's address: 403 from an enforced
        one; an unenforced one that would refuse it is recorded (log and metrics)."""
        client = security.client_address(scope, self.trusted_proxies)
        try:
            verdict = await restrictions.check_api(caller, client)
        except ApiError:
            metrics.ip_refused(enforced=True)
            raise
        for restriction_id in verdict.recorded:
            metrics.ip_refused(enforced=False)
            log.warning(
                "IP restriction %s (not enforced) would refuse %s: %s %r",
                restriction_id,
                client if client is not None else "an unknown address",
                scope["method"],
                scope["path"],
            )

    def _entry(
        self, scope: Scope, arrived: datetime, started: float, outcome: Any
    ) -> tuple[Any, ...] | None:
        """The request's journal entry (the values of `journal.COLUMNS`); None for a request
        no credential identified (no account to file it under)."""
        caller: auth.Caller | None = scope.get(CALLER)
        if caller is None:
            return None
        if isinstance(outcome, ApiError):
            status, error_code = outcome.code.status, outcome.code.error_code
        else:
            status, error_code = _status_of(outcome), None
        raw: bytes = scope.get(RAW_BODY, b"")
        offset = timefmt.clock_offset.get()
        return (
            caller.account_id,
            arrived + offset if offset else arrived,
            operation_id(scope),
            scope["method"],
            scope["path"],
            scope.get("query_string", b"").decode("latin-1"),
            self.spec_operation_id,
            status,
            error_code,
            caller.principal_id,
            caller.api_key_id,
            caller.access_token_id,
            self.scope,
            round((time.perf_counter() - started) * 1000, 3),
            len(raw),
            journal.body_of(raw, self.secrets),
        )

    def _row(self, path: dict[str, Any] | ApiError) -> tuple[str, str] | None:
        """(collection, id) of the resource this GET reads, for the credential check to read
        along (`security.row_target`); None for other operations and for an invalid id."""
        if self.row is None or isinstance(path, ApiError):
            return None
        collection, param = self.row
        value = path[param.name]
        return (collection, value) if isinstance(value, str) else None

    async def _respond(self, result: Any, send: Send) -> None:
        status = 200
        if isinstance(result, tuple):
            result, status = result
        if hasattr(result, "status_code") and hasattr(result, "body"):  # a ready response
            await send_response(send, result.status_code, result.body, result.content_type)
            return
        if isinstance(result, rendercache.Page):
            plan = self.responses.page_plan(status, result.key) if self.responses else None
            if plan is not None:
                await send_response(send, status, plan.render(result), JSON)
                return
            result = result.as_dict()
        if self.responses is not None:
            self.responses.check(status, result)
        if result is None:
            await send_response(send, status, b"", None)
            return
        await send_response(send, status, orjson.dumps(result), JSON)


def _status_of(result: Any) -> int:
    """The status a handler's result is answered with (as `Operation._respond` sends it)."""
    if isinstance(result, tuple):
        return int(result[1])
    return int(getattr(result, "status_code", 200))


class OperationAPI(RoutedAPI[Operation]):  # type: ignore[misc]
    """The operations of one spec (Connexion registers each API on each middleware)."""

    def __init__(
        self,
        *args: Any,
        validate_responses: bool = True,
        max_body_bytes: int,
        version_headers: tuple[str, ...] = (VERSION_HEADER,),
        fault_operations: frozenset[str] = frozenset(),
        trusted_proxies: tuple[cidrs.Network, ...] = (),
        journal_keep: int = 0,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self._options = {
            "journal_keep": journal_keep,
            "validate_responses": bool(validate_responses),
            "max_body_bytes": max_body_bytes,
            "version_headers": version_headers,
            "fault_operations": fault_operations,
            "trusted_proxies": trusted_proxies,
        }
        self.add_paths()

    def add_paths(self) -> None:
        self.operations = _Built(super().add_operation)
        super().add_paths()

    def add_operation(self, path: str, method: str) -> None:
        """Note the operation; it is built at its first request (`_Built`)."""
        operation = self.specification.get_operation(path, method)
        self.operations.pending[routing.resolved_id(self.resolver, operation)] = (path, method)

    def make_operation(self, operation: AbstractOperation) -> Operation:
        return Operation(operation, **self._options)  # type: ignore[arg-type]


class _Built(dict[str, Operation]):
    """An API's operations by id, each built when first asked for (`operations[id]`, as
    Connexion's `RoutedMiddleware` looks them up): its Connexion operation (parameters,
    security, the handler resolved and its module imported) and our pipeline of it
    (validators made, themselves compiled at first use). Building all 172 took ~25 ms of
    every start, for the few operations most processes serve. `build_all` builds the rest
    (the test that compiles every validator)."""

    def __init__(self, build: Any) -> None:
        super().__init__()
        self.pending: dict[str, tuple[str, str]] = {}  # id -> (path, method)
        self._build = build  # RoutedAPI.add_operation: builds and stores one

    def __missing__(self, name: str) -> Operation:
        where = self.pending.pop(name, None)
        if where is None:
            raise KeyError(name)
        self._build(*where)
        return self[name]

    def build_all(self) -> None:
        for name in list(self.pending):
            self[name]


class OperationMiddleware(RoutedMiddleware[OperationAPI]):  # type: ignore[misc]
    """Serves every routed spec operation (Connexion's RoutingMiddleware names it)."""

    api_cls = OperationAPI

    def __init__(self, app: ASGIApp, **options: Any) -> None:
        super().__init__(app)
        self._options = options

    def add_api(self, specification: Any, **kwargs: Any) -> OperationAPI:
        api: OperationAPI = super().add_api(specification, **{**kwargs, **self._options})
        return api
