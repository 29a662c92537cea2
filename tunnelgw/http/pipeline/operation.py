"""One spec operation served end to end (`Operation`), and the Connexion middleware that
serves every routed operation with one (`OperationMiddleware`); the steps are the modules
beside this one (parameters, security, bodies, responses)."""

from __future__ import annotations

import inspect
import logging
from typing import Any

import orjson
from connexion.middleware.abstract import RoutedAPI, RoutedMiddleware
from connexion.operations import AbstractOperation
from starlette.types import ASGIApp, Receive, Scope, Send

from tunnelgw.core.errors import ApiError
from tunnelgw.http import metrics
from tunnelgw.http.pipeline import bodies, parameters, security
from tunnelgw.http.pipeline.bodies import JSON, Body
from tunnelgw.http.pipeline.parameters import INTEGER, VERSION_HEADER, Parameters, header
from tunnelgw.http.pipeline.responses import Responses, send_response
from tunnelgw.rules import cidrs
from tunnelgw.services import auth, faults, rendercache, restrictions
from tunnelgw.storage import db

log = logging.getLogger("tunnelgw.restrictions")

HANDLERS_PACKAGE = "handlers"  # operationIds resolve relative to it (tunnelgw.http.app)
# A scope key the fixture loader's in-process requests carry: fault rules leave them alone.
INTERNAL = "tunnelgw.internal"
ADMIN_OPERATIONS = "admin."  # the admin API's operationIds (handlers/admin.py)


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
    ) -> None:
        self.operation_id = operation.operation_id
        # The spec's operationId (Connexion's is the resolved handler, `handlers.<id>`).
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
        self.row = security.row_target(operation, self.parameters.path)
        self.max_body_bytes = max_body_bytes
        self.body = Body(operation) if operation.request_body else None
        # Body fields that repeat a path parameter (`x-path-param`), as client libraries send.
        self.echoes = bodies.path_echoes(self.body.schema) if self.body is not None else ()
        self.takes_body = self.body is not None and (has_kwargs or "body" in arguments)
        self.responses = Responses(operation) if validate_responses else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
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
        async with db.request_scope():
            if self.authenticate is not None:
                info = await self.authenticate(headers, self._row(path))
                caller: auth.Caller = info["caller"]
                auth.activate(caller)
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
            if self.faults and not scope.get(INTERNAL):
                await faults.apply(auth.caller().account_id, self.spec_operation_id)
            result = await self.handler(**kwargs)
        await self._respond(result, send)

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
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self._options = {
            "validate_responses": bool(validate_responses),
            "max_body_bytes": max_body_bytes,
            "version_headers": version_headers,
            "fault_operations": fault_operations,
            "trusted_proxies": trusted_proxies,
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
