"""`RequestContext`, the outermost of our layers in Connexion's stack: activates the app's
state (settings, database, KEK: tunnelgw.http.state), gives each request an `op_` operation id
(logged, sent as `Operation-Id`, put in error bodies), sets the public base URL, bounds the
time its body may take to arrive (408; no bound, and no timer, for a body the edge of
`tunnelgw serve` received whole before the app started: tunnelgw.http.edge), counts the
request in the metrics and writes the access log. Everything else a request goes through
is in tunnelgw.http.pipeline.
"""

from __future__ import annotations

import asyncio
import logging
import time

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tunnelgw.core import ids, urls
from tunnelgw.core.errors import ApiError, Code
from tunnelgw.http import logconfig, metrics
from tunnelgw.http.edge import BODY_RECEIVED
from tunnelgw.http.state import AppState

OPERATION_ID_KEY = "tunnelgw.operation_id"
VERSION_HEADER = "service-version"
# Polled at moments that depend on timing: their operation ids do not shift the others' in a
# deterministic run (tunnelgw.core.ids).
PROBE_PATHS = frozenset({"/healthz", "/readyz", "/metrics"})
SUPPORTED_VERSION = "2"

access_log = logging.getLogger("tunnelgw.access")


def operation_id(scope: Scope) -> str:
    """The request's `op_` id (made on first use for requests that bypass RequestContext)."""
    found = scope.get(OPERATION_ID_KEY)
    if found is None:
        probe = scope.get("path") in PROBE_PATHS
        found = scope[OPERATION_ID_KEY] = ids.new_operation_id(probe=probe)
    return str(found)


def spec_operation(scope: Scope) -> str | None:
    """The handler Connexion routed this request to, if any, as metrics labels and access-log
    lines have always named it: `handlers.<operationId>` (the handlers package installs as
    `tunnelgw.handlers`; the label stays what dashboards already select on)."""
    routing = scope.get("extensions", {}).get("connexion_routing", {})
    value = routing.get("operation_id")
    return str(value).removeprefix("tunnelgw.") if value else None


class RequestContext:
    def __init__(
        self,
        app: ASGIApp,
        *,
        public_url: str | None = None,
        state: AppState,
        body_timeout: float | None = None,
    ) -> None:
        self.app = app
        self.public_url = public_url
        self.state = state
        self.body_timeout = body_timeout

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        tokens = self.state.activate()
        op_id = operation_id(scope)
        # Connexion's router annotates a shallow copy of the scope; a shared `extensions` dict
        # lets us read which operation it routed to (uvicorn's scope has none of its own).
        extensions = scope.setdefault("extensions", {})
        urls.set_base(self.public_url or _request_base(scope))
        started = time.perf_counter()
        status = 0
        op_header = (b"operation-id", op_id.encode())

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message["headers"] = [*message.get("headers", ()), op_header]
            await send(message)

        if self.body_timeout is not None and BODY_RECEIVED not in extensions:
            # Not yet all in (the edge marks a body that is): reading it may stall.
            receive = _in_time(receive, self.body_timeout)
        try:
            await self.app(scope, receive, send_with_id)
        finally:
            AppState.deactivate(tokens)
            elapsed = time.perf_counter() - started
            operation = spec_operation(scope)
            metrics.observe(operation, scope["method"], status, elapsed)
            if access_log.isEnabledFor(logging.INFO):
                _log_access(scope, status, elapsed, op_id, operation)


def _in_time(receive: Receive, seconds: float) -> Receive:
    """`receive` that raises ApiError(408) once the body has taken `seconds` from the start
    of the request (its headers are in by then); the answer closes the connection."""
    deadline = asyncio.get_running_loop().time() + seconds

    async def receive_in_time() -> Message:
        try:
            async with asyncio.timeout_at(deadline):
                return await receive()
        except TimeoutError:
            raise ApiError(
                Code.REQUEST_TIMEOUT,
                f"The request body did not arrive within {seconds:g} seconds.",
                headers={"Connection": "close"},
            ) from None

    return receive_in_time


def _log_access(
    scope: Scope, status: int, elapsed: float, op_id: str, operation: str | None
) -> None:
    """One access-log line. With the default text logging it is written straight to the
    buffered handler (`logconfig.direct_text`: 6.6 -> 2 us a request); otherwise a record is
    made here rather than by `Logger.info`, which would walk the stack to find the caller."""
    method, path = scope["method"], scope["path"]
    message = f"{method} {path} {status} {elapsed * 1000:.1f}ms {op_id} {operation or '-'}"
    direct = logconfig.direct_text(access_log, logging.INFO)
    if direct is not None:
        handler, formatter = direct
        handler.write(formatter.line(access_log.name, "INFO", message))
        return
    record = logging.LogRecord(access_log.name, logging.INFO, __file__, 0, message, None, None)
    record.method = method
    record.path = path
    record.status = status
    record.duration_ms = round(elapsed * 1000, 2)
    record.operation_id = op_id
    record.spec_operation = operation
    access_log.handle(record)


def _request_base(scope: Scope) -> str:
    for key, value in scope["headers"]:
        if key == b"host":
            return f"{scope.get('scheme', 'http')}://{value.decode('latin-1')}"
    server = scope.get("server") or ("127.0.0.1", 80)
    return f"{scope.get('scheme', 'http')}://{server[0]}:{server[1]}"
