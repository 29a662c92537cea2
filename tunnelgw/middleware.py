"""`RequestContext`, the outermost of our layers in Connexion's stack: gives each request an
`op_` operation id (logged, sent as `Operation-Id`, put in error bodies), sets the public base
URL, counts the request in the metrics and writes the access log. Everything else a request
goes through is in tunnelgw.pipeline.
"""

from __future__ import annotations

import logging
import time

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tunnelgw import ids, metrics, urls

OPERATION_ID_KEY = "tunnelgw.operation_id"
VERSION_HEADER = "service-version"
SUPPORTED_VERSION = "2"

access_log = logging.getLogger("tunnelgw.access")


def operation_id(scope: Scope) -> str:
    """The request's `op_` id (made on first use for requests that bypass RequestContext)."""
    found = scope.get(OPERATION_ID_KEY)
    if found is None:
        found = scope[OPERATION_ID_KEY] = ids.new_id("op")
    return str(found)


def spec_operation(scope: Scope) -> str | None:
    """The operationId Connexion routed this request to, if any."""
    routing = scope.get("extensions", {}).get("connexion_routing", {})
    value = routing.get("operation_id")
    return str(value) if value else None


class RequestContext:
    def __init__(self, app: ASGIApp, *, public_url: str | None = None) -> None:
        self.app = app
        self.public_url = public_url

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        op_id = operation_id(scope)
        # Connexion's router annotates a shallow copy of the scope; a shared `extensions` dict
        # lets us read which operation it routed to (uvicorn's scope has none of its own).
        scope.setdefault("extensions", {})
        urls.set_base(self.public_url or _request_base(scope))
        started = time.perf_counter()
        status = 0

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message.setdefault("headers", [])
                message["headers"] = [*message["headers"], (b"operation-id", op_id.encode())]
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        finally:
            elapsed = time.perf_counter() - started
            metrics.observe(spec_operation(scope), scope["method"], status, elapsed)
            access_log.info(
                "%s %s %d %.1fms %s %s",
                scope["method"],
                scope["path"],
                status,
                elapsed * 1000,
                op_id,
                spec_operation(scope) or "-",
                extra={
                    "method": scope["method"],
                    "path": scope["path"],
                    "status": status,
                    "duration_ms": round(elapsed * 1000, 2),
                    "operation_id": op_id,
                    "spec_operation": spec_operation(scope),
                },
            )


def _request_base(scope: Scope) -> str:
    host = Headers(scope=scope).get("host")
    if not host:
        server = scope.get("server") or ("127.0.0.1", 80)
        host = f"{server[0]}:{server[1]}"
    return f"{scope.get('scheme', 'http')}://{host}"
