"""Test helpers: a real tunnelgw server for test suites (docs/testing-your-code.md).

- `TunnelgwServer`: a context manager starting `tunnelgw serve` in its own process on a free
  port of 127.0.0.1, with the admin API on: `base_url`, `token`, `account_id`, `headers`,
  `client()`, `reset()`, `load()`, `advance()`, `set_time()`, `fault()`,
  `connect_agent()`, `disconnect_agent()`, `stop()`.
- `TunnelgwError`: an error answer of the server; `TunnelgwStartError`: a failed start.
- The pytest plugin (`tunnelgw.testing.pytest_plugin`, registered through the `pytest11`
  entry point): the fixtures `tunnelgw_server` (session) and `tunnelgw` (reset per test).

The names load at first use, so importing the plugin costs next to nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tunnelgw.testing.admin import TunnelgwError
    from tunnelgw.testing.server import TunnelgwServer, TunnelgwStartError

__all__ = ["TunnelgwError", "TunnelgwServer", "TunnelgwStartError"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from tunnelgw.testing import admin, server

        return getattr(admin if name == "TunnelgwError" else server, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
