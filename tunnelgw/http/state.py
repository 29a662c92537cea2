"""What one app owns (its settings, database and key-encryption key), and making it the
state the layers below read for the current request.

An app made by `tunnelgw.http.app.create_app` holds an `AppState`; its request middleware
activates it at the start of every request. Each lower layer owns the context variable of its
part (`settings.current()`, `db.current()`, `keys.current()`, the write units' change
observer: tunnelgw.services.events), so nothing below the HTTP layer
looks the app up. Outside a request (the CLI, scripts) they fall back to the process defaults
(`settings.use`, `db.init`, `keys.init`). So several apps can live in one process (the fixture
loader's, a test's), and none installs anything process-wide.
"""

from __future__ import annotations

from contextvars import ContextVar, Token
from typing import Any

from tunnelgw.core import settings as settings_module
from tunnelgw.core.settings import Settings
from tunnelgw.crypto import keys
from tunnelgw.services import events
from tunnelgw.storage import db
from tunnelgw.storage.db import Database

Tokens = tuple[
    Token["AppState | None"],
    Token[Settings | None],
    Token[Database | None],
    Token[keys.Kek | None],
    Any,
]


class AppState:
    """What one app owns: made by the app factory, the KEK loaded at start (or first use)."""

    __slots__ = ("app", "database", "kek", "settings")

    def __init__(self, settings: Settings, database: Database) -> None:
        self.settings = settings
        self.database = database
        self.kek = keys.Kek(settings)
        self.app: Any = None  # the ASGI app itself (the fixture loader posts api items to it)

    def activate(self) -> Tokens:
        """Make this state the current one for this task (and the tasks it starts)."""
        return (
            _active.set(self),
            settings_module.activate(self.settings),
            db.activate(self.database),
            keys.activate(self.kek),
            events.activate(),  # the write units of requests fire events
        )

    @staticmethod
    def deactivate(tokens: Tokens) -> None:
        state_token, settings_token, database_token, kek_token, events_token = tokens
        events.deactivate(events_token)
        keys.deactivate(kek_token)
        db.deactivate(database_token)
        settings_module.deactivate(settings_token)
        _active.reset(state_token)


_active: ContextVar[AppState | None] = ContextVar("tunnelgw_app_state", default=None)


def active() -> AppState | None:
    """The state of the app serving the current request (for handlers that drive the app
    itself: the admin API's fixture loading), or None outside requests."""
    return _active.get()
