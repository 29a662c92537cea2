"""The credential check of one operation: HTTP bearer, the one scheme the spec uses, with the
spec's `x-bearerInfoFunc`; and, for a GET of one resource by id, the row the check may read
along in its own statement (tunnelgw.services.auth)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from connexion.operations import AbstractOperation
from connexion.utils import get_function_from_name
from starlette.types import Scope

from tunnelgw.core.errors import ApiError, Code
from tunnelgw.core.platform_errors import masked
from tunnelgw.http.pipeline.parameters import Param, header
from tunnelgw.rules import cidrs


def row_target(operation: AbstractOperation, path: list[Param]) -> tuple[str, Param] | None:
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


def credential_check(operation: AbstractOperation) -> Authenticate | None:
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
        sent = header(headers, b"authorization")
        if sent is None:
            raise ApiError(Code.AUTHENTICATION_REQUIRED)
        kind, _, token = sent.partition(" ")
        if kind.lower() != "bearer" or not token.strip():
            context = {"reason": "scheme", "header": masked(sent)}
            raise ApiError(Code.INVALID_CREDENTIALS, context=context)
        return await bearer_info(token.strip(), row)

    return authenticate


def client_address(scope: Scope, trusted: tuple[cidrs.Network, ...]) -> cidrs.Address | None:
    """The request's client address: the peer's, or behind a trusted proxy (the setting
    `trusted_proxies`) the right-most untrusted address of `X-Forwarded-For`."""
    peer = scope.get("client")
    forwarded = [
        value.decode("latin-1") for key, value in scope["headers"] if key == b"x-forwarded-for"
    ]
    return cidrs.client_address(peer[0] if peer else None, forwarded, trusted)
