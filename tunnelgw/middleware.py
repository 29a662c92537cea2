"""ASGI middlewares around Connexion's stack.

- `RequestContext` (outermost): gives each request an `op_` operation id (logged, sent as
  `Operation-Id`, put in error bodies), sets the public base URL, writes the access log.
- `RequestBody`: 413 for bodies over `max_body_bytes` (by Content-Length or while
  streaming); a body sent without Content-Type is read as JSON, by validation and handler
  alike.
- `VersionHeader`: the `Service-Version: 2` rule, for operations that declare the header.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Collection
from typing import Any

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tunnelgw import ids, metrics, urls
from tunnelgw.errors import ApiError, Code

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


class RequestBody:
    def __init__(self, app: ASGIApp, *, max_body_bytes: int) -> None:
        self.app = app
        self.limit = max_body_bytes

    def _too_large(self) -> ApiError:
        return ApiError(
            Code.BODY_TOO_LARGE,
            f"The request body is larger than {self.limit} bytes.",
            limit=str(self.limit),
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        declared = headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.limit:
            raise self._too_large()
        has_body = declared not in (None, "0") or "transfer-encoding" in headers
        if has_body and "content-type" not in headers:
            # In place: later middlewares (routing) annotate this same scope.
            scope["headers"] = [*scope["headers"], (b"content-type", b"application/json")]
        received = 0

        async def counting_receive() -> Message:
            nonlocal received
            message = await receive()
            received += len(message.get("body", b""))
            if received > self.limit:
                raise self._too_large()
            return message

        await self.app(scope, counting_receive, send)


class VersionHeader:
    def __init__(self, app: ASGIApp, *, operations: Collection[str]) -> None:
        self.app = app
        self.operations = frozenset(operations)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and spec_operation(scope) in self.operations:
            value = Headers(scope=scope).get(VERSION_HEADER)
            if value is None:
                raise ApiError(Code.VERSION_HEADER_MISSING, param="Service-Version")
            if value.strip() != SUPPORTED_VERSION:
                raise ApiError(
                    Code.VERSION_UNSUPPORTED,
                    f"Service-Version {value[:20]!r} is not supported; send 'Service-Version: 2'.",
                    param="Service-Version",
                )
        await self.app(scope, receive, send)


def versioned_operations(spec: dict[str, Any], header_ref: str) -> set[str]:
    """operationIds of the spec whose parameters reference the version header."""
    found: set[str] = set()
    for path_item in spec.get("paths", {}).values():
        shared = path_item.get("parameters", [])
        for method, op in path_item.items():
            if method == "parameters" or not isinstance(op, dict):
                continue
            params = [*shared, *op.get("parameters", [])]
            if any(p.get("$ref") == header_ref for p in params):
                found.add(op["operationId"])
    return found
