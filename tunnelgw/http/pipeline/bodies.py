"""The JSON request body of one operation: its content type, its size, strict parsing, schema
validation with catalog errors, and the body fields that repeat a path parameter."""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

from connexion.operations import AbstractOperation
from jsonschema.exceptions import best_match
from starlette.requests import ClientDisconnect
from starlette.types import Receive, Scope

from tunnelgw.core.errors import ApiError, Code
from tunnelgw.http import validation
from tunnelgw.http.pipeline.parameters import header
from tunnelgw.http.validation import Compiled

JSON = "application/json"

# The request body as sent (for handlers that report positions in it: the admin fixtures).
raw_body: ContextVar[bytes] = ContextVar("tunnelgw_raw_body", default=b"")


class Body:
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
        content_type = header(headers, b"content-type")
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
