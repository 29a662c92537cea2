"""Accounts on demand for test suites: `TunnelgwOperator` (the operator token of a server, the
one credential that creates, lists and drops accounts) and `TunnelgwAccount` (one account it
made: its admin key, and the admin API's calls acting on it). `ApiSession`, the HTTP side of
both `TunnelgwAccount` and `TunnelgwServer`, sends one account's requests. Only the standard
library is imported here at import time."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self

from tunnelgw.testing import inputs
from tunnelgw.testing.admin import AdminCalls, TunnelgwError

if TYPE_CHECKING:
    import httpx

SERVICE_VERSION = "2"
ACCOUNTS = "/_admin/accounts"
_MAX_PAGES = 10_000


def _client_args(base_url: str, headers: dict[str, str], kwargs: dict[str, Any]) -> dict[str, Any]:
    sent = {**headers, **dict(kwargs.pop("headers", None) or {})}
    # A proxy from the environment must not carry requests to the test server.
    return {"base_url": base_url, "timeout": 30.0, "trust_env": False} | kwargs | {"headers": sent}


def _call(client: httpx.Client, method: str, path: str, body: Any = None, **params: Any) -> Any:
    """One request; the JSON answer (None when empty); an error status as TunnelgwError."""
    content = None if body is None else json.dumps(body, default=inputs.json_default)
    headers = {"Content-Type": "application/json"} if content is not None else {}
    # No `params=` without any: httpx would drop the query the path carries.
    extra: dict[str, Any] = {"params": params} if params else {}
    response = client.request(method, path, content=content, headers=headers, **extra)
    if response.is_error:
        try:
            error: Any = response.json()
        except ValueError:
            error = response.text
        raise TunnelgwError(method, path, response.status_code, error)
    return response.json() if response.content else None


class ApiSession(AdminCalls):
    """The requests of one account's admin (`base_url`, `token`): `headers`, `client()`,
    `async_client()`, and the admin API's calls (AdminCalls) on the account."""

    _http: httpx.Client | None = None

    @property
    def base_url(self) -> str:  # pragma: no cover - provided by the subclasses
        raise NotImplementedError

    @property
    def token(self) -> str:  # pragma: no cover - provided by the subclasses
        raise NotImplementedError

    @property
    def headers(self) -> dict[str, str]:
        """`Authorization` and `Service-Version` for requests as the account's admin."""
        return {"Authorization": f"Bearer {self.token}", "Service-Version": SERVICE_VERSION}

    def client(self, **kwargs: Any) -> httpx.Client:
        """An httpx.Client with `base_url` and `headers` set (keyword arguments go to
        httpx.Client; `headers` are added to these). Close it, e.g. `with x.client()`."""
        import httpx

        return httpx.Client(**_client_args(self.base_url, self.headers, kwargs))

    def async_client(self, **kwargs: Any) -> httpx.AsyncClient:
        """The same as an httpx.AsyncClient."""
        import httpx

        return httpx.AsyncClient(**_client_args(self.base_url, self.headers, kwargs))

    def _admin(self, method: str, path: str, body: Any = None) -> Any:
        if self._http is None:
            self._http = self.client()
        return _call(self._http, method, path, body)

    def _close_http(self) -> None:
        if self._http is not None:
            self._http.close()
            self._http = None


class TunnelgwAccount(ApiSession):
    """An account the operator made (`TunnelgwOperator.create_account`): `account_id`,
    `token` (its admin API key's), `admin_user_id`, `api_key_id`, `name`, `fixture` (what the
    fixture given at creation loaded, or None); `client()`, `headers` and every admin API
    call (`reset()`, `load()`, `advance()`, `fault()`, `requests()`, ...) act on it.
    `drop()` deletes it with everything in it; as a context manager it is dropped at the
    block's end."""

    def __init__(self, operator: TunnelgwOperator, answer: Mapping[str, Any]) -> None:
        self.operator = operator
        self.account_id: str = answer["id"]
        self.name: str = answer["name"]
        self.admin_user_id: str = answer["admin_user_id"]
        self.api_key_id: str = answer["api_key_id"]
        self.fixture: dict[str, Any] | None = answer.get("fixture")
        self._token: str = answer["token"]
        self.dropped = False

    @property
    def base_url(self) -> str:
        return self.operator.base_url

    @property
    def token(self) -> str:
        return self._token

    def drop(self) -> dict[str, int]:
        """Delete the account and everything in it; the rows deleted per table. Safe to
        call again (then `{}`)."""
        self._close_http()
        if self.dropped:
            return {}
        deleted = self.operator.drop_account(self.account_id)
        self.dropped = True
        return deleted

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.drop()

    def __repr__(self) -> str:
        state = " (dropped)" if self.dropped else ""
        return f"<TunnelgwAccount {self.account_id} at {self.base_url}{state}>"


class TunnelgwOperator:
    """The operator of a running tunnelgw (`base_url`, `operator_token`: the server's
    TUNNELGW_OPERATOR_TOKEN, admin API on): makes, lists and drops accounts. For a server a
    test suite shares (a CI service container, one server for all xdist workers)."""

    def __init__(self, base_url: str, operator_token: str) -> None:
        self.base_url = base_url.rstrip("/")
        self.operator_token = operator_token
        self._http: httpx.Client | None = None
        # The TunnelgwServer this operator belongs to, when it started here (its log).
        self.server: Any = None

    @property
    def headers(self) -> dict[str, str]:
        return {
            "Authorization": f"Bearer {self.operator_token}",
            "Service-Version": SERVICE_VERSION,
        }

    def create_account(
        self,
        name: str = "",
        fixture: str | os.PathLike[str] | Mapping[str, Any] | None = None,
    ) -> TunnelgwAccount:
        """A new account with an admin user and key; `fixture` (a path, YAML/JSON text or a
        mapping: a fixture or snapshot document) is loaded into it in the same call (checked
        here first, so problems name positions in the file)."""
        body: dict[str, Any] = {"name": name}
        if fixture is not None:
            if isinstance(fixture, Mapping):
                body["fixture"] = dict(fixture)
            else:
                text, source = inputs.fixture_source(fixture)
                body["fixture"] = inputs.checked_document(text, source)
        return TunnelgwAccount(self, self._call("POST", ACCOUNTS, body))

    def accounts(self) -> list[dict[str, Any]]:
        """Every account of the server (`id`, `name`, `created_at`), newest first."""
        found: list[dict[str, Any]] = []
        params: dict[str, Any] = {"limit": 100}
        for _ in range(_MAX_PAGES):
            page = self._call("GET", ACCOUNTS, **params)
            found += page["accounts"]
            if page["next_page_uri"] is None:
                return found
            params["before_id"] = page["accounts"][-1]["id"]
        raise RuntimeError(f"more than {_MAX_PAGES} pages of accounts")  # pragma: no cover

    def drop_account(self, account_id: str) -> dict[str, int]:
        """Delete an account with everything in it; the rows deleted per table."""
        deleted: dict[str, int] = self._call("DELETE", f"{ACCOUNTS}/{account_id}")["deleted"]
        return deleted

    def close(self) -> None:
        if self._http is not None:
            self._http.close()
            self._http = None

    def _call(self, method: str, path: str, body: Any = None, **params: Any) -> Any:
        if self._http is None:
            import httpx

            self._http = httpx.Client(**_client_args(self.base_url, self.headers, {}))
        return _call(self._http, method, path, body, **params)

    def __repr__(self) -> str:
        return f"<TunnelgwOperator {self.base_url}>"
