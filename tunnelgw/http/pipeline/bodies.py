"""The JSON request body of one operation: its size, its content type, strict parsing, schema
validation with catalog errors, and the body fields that repeat a path parameter. The body is
received before the request takes a database connection (tunnelgw.http.pipeline.operation), and
a large one is parsed and checked on a worker thread, so the event loop keeps serving."""

from __future__ import annotations

import asyncio
from typing import Any

from connexion.operations import AbstractOperation
from starlette.requests import ClientDisconnect
from starlette.types import Receive

from tunnelgw.core.errors import ApiError, Code
from tunnelgw.http import validation
from tunnelgw.http.explain import Explainer
from tunnelgw.http.pipeline.parameters import header
from tunnelgw.http.validation import Compiled

JSON = "application/json"
# Bodies larger than this are parsed and checked on a worker thread (a 1 MiB body costs tens
# of milliseconds; the thread hop, tens of microseconds, is not worth it for small ones).
THREAD_BYTES = 64 * 1024


class Body:
    """Reading and validating the JSON request body of one operation."""

    def __init__(self, operation: AbstractOperation) -> None:
        self.consumes = [c.lower() for c in operation.consumes]
        self.required = bool(operation.request_body.get("required", False))
        self.schema = operation.body_schema(JSON)
        # Formats unchecked: the code that reads a formatted field (a timestamp) parses it.
        self.fast = Compiled(self.schema, formats=False)
        self._explainer: Explainer | None = None

    async def parse(self, headers: list[tuple[bytes, bytes]], raw: bytes) -> Any:
        """The body received as `raw`, checked: 415 for another content type, 400 for
        anything but a JSON object valid under the operation's schema."""
        content_type = header(headers, b"content-type")
        mime = (content_type or JSON).partition(";")[0].strip().lower()
        if mime not in self.consumes:
            raise ApiError(
                Code.UNSUPPORTED_MEDIA_TYPE,
                f"Content-Type {mime[:64]!r} is not supported; send {', '.join(self.consumes)}.",
                context={"content_type": (content_type or "")[:64]},
            )
        if len(raw) > THREAD_BYTES:
            return await asyncio.to_thread(self.check, raw)
        return self.check(raw)

    def check(self, raw: bytes) -> Any:
        """The parsed body, or ApiError (400) naming its first problem."""
        if not raw:
            if self.required:
                raise ApiError(Code.INVALID_BODY, "This operation needs a JSON object body.")
            return None
        body = validation.loads_strict(raw)
        if body is None:
            raise ApiError(Code.INVALID_BODY, "The request body must be a JSON object, not null.")
        if not self.fast.get().is_valid(body):
            if self._explainer is None:
                self._explainer = Explainer(self.fast.json_schema())
            raise self._explainer.explain(body)
        validation.check_extensions(self.schema, body)
        return body


async def receive_body(receive: Receive, limit: int) -> bytes:
    """The request body, whole; ApiError(413) past `limit` bytes."""
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


def body_too_large(limit: int) -> ApiError:
    return ApiError(
        Code.BODY_TOO_LARGE, f"The request body is larger than {limit} bytes.", limit=str(limit)
    )


def path_echoes(schema: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    """(body field, path parameter) of each top-level property marked `x-path-param`."""
    return tuple(
        (name, prop["x-path-param"])
        for name, prop in schema.get("properties", {}).items()
        if isinstance(prop, dict) and "x-path-param" in prop
    )


def check_echoes(
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
