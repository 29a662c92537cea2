"""Test factories: accounts, principals and keys made in the app's own event loop, and an
API client that validates every response against the spec."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx
from starlette.testclient import TestClient

from models.principal import Kind
from tests.openapi_check import SpecValidator
from tunnelgw import accounts, db
from tunnelgw.accounts import Credentials

_UNSET: Any = object()


class ApiClient:
    """Sends API requests with a bearer token and `Service-Version: 2`, and checks every
    response with openapi-core."""

    def __init__(self, http: TestClient, validator: SpecValidator, token: str | None) -> None:
        self.http = http
        self.validator = validator
        self.token = token

    def request(
        self,
        method: str,
        path: str,
        *,
        json: Any = _UNSET,
        content: bytes | str | None = None,
        params: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
        token: str | None = _UNSET,
        version: str | None = "2",
    ) -> httpx.Response:
        sent: dict[str, str] = {}
        token = self.token if token is _UNSET else token
        if token is not None:
            sent["Authorization"] = f"Bearer {token}"
        if version is not None:
            sent["Service-Version"] = version
        sent.update(headers or {})
        kwargs: dict[str, Any] = {"params": params, "headers": sent}
        if json is not _UNSET:
            kwargs["json"] = json
        if content is not None:
            kwargs["content"] = content
        response = self.http.request(method, path, **kwargs)
        self.validator.check(response)
        return response

    def get(self, path: str, **kw: Any) -> httpx.Response:
        return self.request("GET", path, **kw)

    def post(self, path: str, **kw: Any) -> httpx.Response:
        return self.request("POST", path, **kw)

    def patch(self, path: str, **kw: Any) -> httpx.Response:
        return self.request("PATCH", path, **kw)

    def put(self, path: str, **kw: Any) -> httpx.Response:
        return self.request("PUT", path, **kw)

    def delete(self, path: str, **kw: Any) -> httpx.Response:
        return self.request("DELETE", path, **kw)


@dataclass
class Session:
    """A client acting as one principal, with the credentials behind it."""

    client: ApiClient
    creds: Credentials

    def __getattr__(self, name: str) -> Any:
        return getattr(self.client, name)


class Factory:
    def __init__(self, http: TestClient, validator: SpecValidator) -> None:
        self.http = http
        self.validator = validator

    def _run(self, fn: Any, *args: Any) -> Any:
        portal = self.http.portal
        assert portal is not None
        return portal.call(fn, *args)

    def client(self, token: str | None) -> ApiClient:
        return ApiClient(self.http, self.validator, token)

    def account(self) -> Session:
        """A fresh account; the client is its admin user's."""

        async def make() -> Credentials:
            async with db.write() as session:
                return await accounts.create_account_with_admin(session, "test")

        creds = self._run(make)
        return Session(self.client(creds.token), creds)

    def principal(self, account_id: str, kind: Kind = "user", *, admin: bool = False) -> Session:
        """Another principal of `account_id`, with a key of its own."""

        async def make() -> Credentials:
            async with db.write() as session:
                principal = await accounts.create_principal(
                    session, account_id, kind, name=kind, is_admin=admin
                )
                key, token = await accounts.issue_key(session, principal)
                return Credentials(account_id, principal.id, key.id, token)

        creds = self._run(make)
        return Session(self.client(creds.token), creds)

    def query(self, fn: Any) -> Any:
        """Run `await fn(session)` in a read session on the app's database."""

        async def run() -> Any:
            async with db.read() as session:
                return await fn(session)

        return self._run(run)


def assert_error(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    """Assert an error response's status and code; return its body."""
    assert response.status_code == status, response.text
    body: dict[str, Any] = response.json()
    assert body["error_code"] == code, body
    assert body["status_code"] == status
    assert body["details"]["operation_id"] == response.headers["operation-id"]
    return body
