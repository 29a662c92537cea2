"""Error rendering: every exception, ours or Connexion's or Starlette's, becomes the one
wire-conventions error body. Registered once, for every error source, in `app.py`.
"""

from __future__ import annotations

import functools
import logging
import re
from typing import Any

import orjson
from connexion.exceptions import (
    BadRequestProblem,
    ExtraParameterProblem,
    NonConformingResponse,
    ProblemException,
    UnsupportedMediaTypeProblem,
)
from connexion.lifecycle import ConnexionResponse
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect

from tunnelgw.core import platform, platform_errors
from tunnelgw.core.errors import ApiError, Code
from tunnelgw.core.platform import Operation
from tunnelgw.http.middleware import operation_id

log = logging.getLogger("tunnelgw.errors")

_BY_STATUS = {
    400: Code.INVALID_BODY,
    401: Code.INVALID_CREDENTIALS,
    403: Code.PERMISSION_DENIED,
    404: Code.ROUTE_NOT_FOUND,
    405: Code.METHOD_NOT_ALLOWED,
    413: Code.BODY_TOO_LARGE,
    415: Code.UNSUPPORTED_MEDIA_TYPE,
}


def to_api_error(exc: Exception, request_headers: Any = None) -> ApiError:
    """The ApiError that stands for `exc`."""
    if isinstance(exc, ApiError):
        return exc
    if isinstance(exc, ClientDisconnect):  # nobody will read the answer; not our fault
        return ApiError(Code.INVALID_BODY, "The client disconnected before the body arrived.")
    if isinstance(exc, NonConformingResponse):
        return ApiError(Code.INTERNAL)
    if isinstance(exc, UnsupportedMediaTypeProblem):
        return ApiError(Code.UNSUPPORTED_MEDIA_TYPE)
    if isinstance(exc, ExtraParameterProblem):
        return ApiError(Code.INVALID_PARAMETER, str(exc.detail))
    if isinstance(exc, BadRequestProblem):
        return ApiError(Code.INVALID_BODY, str(exc.detail or Code.INVALID_BODY.message))
    if isinstance(exc, ProblemException) and exc.status == 401:
        has_header = request_headers is not None and "authorization" in request_headers
        return ApiError(Code.INVALID_CREDENTIALS if has_header else Code.AUTHENTICATION_REQUIRED)
    status = getattr(exc, "status", None) or getattr(exc, "status_code", None)
    if isinstance(exc, ProblemException | HTTPException) and status in _BY_STATUS:
        headers = getattr(exc, "headers", None) or {}
        return ApiError(_BY_STATUS[status], headers=headers)
    return ApiError(Code.INTERNAL)


class ErrorRenderer:
    """Connexion error handler: the error body for any exception, with `Operation-Id`.

    `Allow` on a 405 is computed from the spec (Starlette's lists only the first route that
    matched the path, not every method of the path). A 404 for an operation of the platform's
    API that the spec does not serve is 501 ERR_NOT_IMPLEMENTED naming it
    (tunnelgw.core.platform); a 405 for one stays 405 and names it too.

    Under the platform profile (`platform_profile=True`), the body, and its status, are the
    platform's for the same failure (tunnelgw.core.platform_errors).
    """

    def __init__(self, spec: dict[str, Any], *, platform_profile: bool = False) -> None:
        self.platform_profile = platform_profile
        # The spec's path templates and methods; their regular expressions, and the platform's
        # operations the spec does not serve, are made at the first 404 or 405 that asks
        # (~180 expressions and a YAML file: ~10 ms that a start need not pay).
        self._templates = [
            (path, sorted(m.upper() for m in item if m in _METHODS))
            for path, item in spec.get("paths", {}).items()
        ]
        self._served = platform.served_shapes(spec)

    @functools.cached_property
    def _paths(self) -> list[tuple[re.Pattern[str], list[str]]]:
        return [(_template_regex(path), methods) for path, methods in self._templates]

    @functools.cached_property
    def _unserved(self) -> dict[tuple[str, int], list[tuple[re.Pattern[str], Operation]]]:
        unserved: dict[tuple[str, int], list[tuple[re.Pattern[str], Operation]]] = {}
        for op in platform.not_in(self._served):
            key = (op.method, op.path.count("/"))
            unserved.setdefault(key, []).append((_template_regex(op.path), op))
        return unserved

    def platform_operation(self, method: str, path: str) -> Operation | None:
        """The platform's operation `method path` is, when the spec does not serve it."""
        for regex, op in self._unserved.get((method, path.count("/")), ()):
            if regex.fullmatch(path):
                return op
        return None

    def allowed(self, path: str) -> list[str]:
        for regex, methods in self._paths:
            if regex.fullmatch(path):
                return methods
        return []

    async def render(self, request: Any, exc: Exception) -> ConnexionResponse:
        """Connexion's error handler (a coroutine function, so no thread hop per error)."""
        return self(request, exc)

    def __call__(self, request: Any, exc: Exception) -> ConnexionResponse:
        error = to_api_error(exc, request.headers)
        if error.code in _NO_ROUTE:
            op = self.platform_operation(request.method, request.url.path)
            error = error if op is None else not_implemented(op, error.code)
        op_id = operation_id(request.scope)
        if error.details.get("injected"):  # a fault rule's answer (admin API), not a failure
            log.info("%s %s: %s (%s)", request.method, request.url.path, error.msg, op_id)
        elif error.code.status >= 500 and error.code is not Code.NOT_IMPLEMENTED:
            log.error(
                "%s %s failed (%s): %r", request.method, request.url.path, op_id, exc, exc_info=exc
            )
        headers = dict(error.headers)
        if error.code is Code.METHOD_NOT_ALLOWED:
            headers["Allow"] = ", ".join(self.allowed(request.url.path))
        if self.platform_profile:
            status, body = platform_errors.body(error, op_id, request.url.path)
        else:
            status, body = error.code.status, error.body(op_id)
        return ConnexionResponse(
            status_code=status,
            body=_dumps(body),
            content_type="application/json",
            headers=headers,
        )


_METHODS = {"get", "put", "post", "delete", "options", "head", "patch", "trace"}
_NO_ROUTE = (Code.ROUTE_NOT_FOUND, Code.METHOD_NOT_ALLOWED)


def not_implemented(op: Operation, code: Code = Code.NOT_IMPLEMENTED) -> ApiError:
    """The error for the platform's operation `op`, which this server does not serve: 501
    ERR_NOT_IMPLEMENTED where the spec lacks the path; on a path the spec has (another
    method of it served), 405 ERR_METHOD_NOT_ALLOWED as HTTP has it, with its `Allow` header,
    naming the operation all the same."""
    if op.status == "retired":
        why = (
            "the platform retired this family on 2025-12-31 in favour of cloud endpoints and "
            "traffic policy, and this server does not emulate this operation of it"
        )
    else:
        why = "this server does not serve it (yet)"
    return ApiError(
        Code.NOT_IMPLEMENTED if code is Code.ROUTE_NOT_FOUND else code,
        f"{op.name} is an operation of the platform's API (family {op.family}): {why}. "
        "docs/platform-coverage.md lists what is served.",
        operation=op.name,
        family=op.family,
    )


def _template_regex(template: str) -> re.Pattern[str]:
    parts = re.split(r"(\{[^}]+\})", template)
    return re.compile("".join("[^/]+" if p.startswith("{") else re.escape(p) for p in parts))


def _dumps(body: dict[str, object]) -> bytes:
    """The error body as JSON; a message that quotes the request (a fixture document's keys,
    say) may carry lone surrogates, which are escaped rather than failing the response."""
    try:
        return orjson.dumps(body)
    except TypeError:
        return orjson.dumps(_clean(body))


def _clean(value: object) -> object:
    if isinstance(value, str):
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    if isinstance(value, dict):
        return {_clean(k): _clean(v) for k, v in value.items()}
    return value
