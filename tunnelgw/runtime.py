"""The state an app owns (its settings, database and key-encryption key), and which app's
state the current request runs under.

An app made by `tunnelgw.app.create_app` holds an `AppState`; its request middleware
activates that state at the start of every request (one ContextVar), so
`settings.current()`, `db.current()` and `keys.current()` answer with the serving app's
objects. Outside a request (the CLI, scripts) they fall back to the process defaults
(`settings.use`, `db.init`, `keys.init`). So several apps can live in one process (the
fixture loader's, a test's), and none installs anything process-wide.
"""

from __future__ import annotations

from contextvars import ContextVar, Token
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tunnelgw.db import Database
    from tunnelgw.settings import Settings


class AppState:
    """What one app owns: made by the app factory, the KEK loaded at start (or first use)."""

    __slots__ = ("app", "database", "kek", "settings")

    def __init__(self, settings: Settings, database: Database) -> None:
        self.settings = settings
        self.database = database
        self.kek: bytes | None = None
        self.app: Any = None  # the ASGI app itself (the fixture loader posts api items to it)


_active: ContextVar[AppState | None] = ContextVar("tunnelgw_app_state", default=None)


def activate(state: AppState) -> Token[AppState | None]:
    """Make `state` the current one for this task (and the tasks it starts)."""
    return _active.set(state)


def deactivate(token: Token[AppState | None]) -> None:
    _active.reset(token)


def active() -> AppState | None:
    """The state of the app serving the current request, or None outside requests."""
    return _active.get()
