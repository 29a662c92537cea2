"""Test helpers: a real tunnelgw server for test suites (docs/testing-your-code.md).

- `TunnelgwServer`: a context manager starting `tunnelgw serve` in its own process on a free
  port of 127.0.0.1, with the admin API on: `base_url`, `token`, `account_id`, `headers`,
  `client()`, `reset()`, `load()`, `advance()`, `set_time()`, `fault()`,
  `connect_agent()`, `disconnect_agent()`, `requests()`, `request_count()`, `verify()`,
  `clear_requests()`, `access_token()`, `scopes_used()`, `stop()`.
- `TunnelgwOperator`: the operator token of a running server (a CI service container, a
  server shared by xdist workers): `create_account()`, `accounts()`, `drop_account()`.
- `TunnelgwAccount`: an account made on demand: `account_id`, `token`, `headers`,
  `client()`, the same admin calls (`reset()`, `load()`, ...) on it, `drop()`.
- `TunnelgwError`: an error answer of the server; `TunnelgwStartError`: a failed start;
  `VerificationError`: a failed `verify()` (an AssertionError listing what was recorded).
- The pytest plugin (`tunnelgw.testing.pytest_plugin`, registered through the `pytest11`
  entry point): the fixtures `tunnelgw_server` (session), `tunnelgw` (reset per test),
  `account` (a fresh account per test), `worker_account` (one per xdist worker) and
  `tunnelgw_operator` (session).

The names load at first use, so importing the plugin costs next to nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tunnelgw.testing.accounts import TunnelgwAccount, TunnelgwOperator
    from tunnelgw.testing.admin import TunnelgwError
    from tunnelgw.testing.journal import VerificationError
    from tunnelgw.testing.server import TunnelgwServer, TunnelgwStartError

__all__ = [
    "TunnelgwAccount",
    "TunnelgwError",
    "TunnelgwOperator",
    "TunnelgwServer",
    "TunnelgwStartError",
    "VerificationError",
]
_HOMES = {
    "TunnelgwAccount": "accounts",
    "TunnelgwError": "admin",
    "TunnelgwOperator": "accounts",
    "VerificationError": "journal",
}


def __getattr__(name: str) -> Any:
    if name in __all__:
        import importlib

        module = importlib.import_module(f"tunnelgw.testing.{_HOMES.get(name, 'server')}")
        return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
