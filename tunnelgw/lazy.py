"""Modules imported on first use: `ssh = lazy.module("tunnelgw.crypto.ssh")` behaves like the
module once an attribute is read. The crypto modules load `cryptography` (~8 MiB, ~0.1 s),
which a server that never signs, parses or wraps a key should not pay for at start-up.
Pair it with a `TYPE_CHECKING` import so type checkers see the real module."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from types import ModuleType
from typing import Any


class LazyModule:
    """A stand-in for the module `name`, which it imports at the first attribute read."""

    __slots__ = ("_module", "_name")

    def __init__(self, name: str) -> None:
        self._name = name
        self._module: ModuleType | None = None

    def __getattr__(self, attr: str) -> Any:
        module = self._module
        if module is None:
            module = self._module = importlib.import_module(self._name)
        return getattr(module, attr)

    def __repr__(self) -> str:
        return f"<lazy module {self._name!r}>"


def module(name: str) -> Any:
    """The lazy stand-in of the module `name` (see the module docstring)."""
    return LazyModule(name)


class _Deferred(ModuleType):
    """The `sys.modules` entry of a third-party module until its first attribute read (see
    `defer`). It has the real module's `__spec__` and `__name__`, which the import system
    reads to hand it out on `import name`; every other attribute imports the real module
    (replacing this entry) and is read from it."""

    def __getattr__(self, attr: str) -> Any:
        real = self.__dict__.get("_deferred_real")
        if real is None:
            name = self.__name__
            if sys.modules.get(name) is self:
                del sys.modules[name]
            real = importlib.import_module(name)
            self.__dict__["_deferred_real"] = real
        return getattr(real, attr)


def defer(name: str) -> None:
    """Let `import name` (by any module, later) bind a stand-in that imports the real module
    at its first attribute read. For a package that a dependency imports at start-up only to
    call it in a path the server never takes: Connexion imports `requests` (~5 MiB with
    urllib3 and charset_normalizer, ~0.08 s) for specs with remote `$ref`s. Only the serving
    process does this (`defer_unused`); a no-op when `name` is already imported or not
    installed."""
    if name in sys.modules:
        return
    spec = importlib.util.find_spec(name)
    if spec is None:
        return
    stand_in = _Deferred(name)
    stand_in.__spec__ = spec
    sys.modules[name] = stand_in


# Imported by a dependency at start-up, never run by the server: Connexion imports `requests`
# to fetch remote `$ref`s, and openapi.yaml has none.
UNUSED_BY_THE_SERVER = ("requests",)

# Optional parts a dependency imports inside `try: ... except ImportError:` and does without:
# httpx (which Connexion's app imports through Starlette's test client) its command-line
# client `httpx._main` (click, rich and pygments: ~3 MiB, ~70 modules; httpx then defines a
# `main` that says the CLI is not installed), uvicorn its watchfiles reloader (StatReload
# instead; `serve` never reloads). In a serving process they are made unimportable.
OPTIONAL_UNUSED_BY_THE_SERVER = ("httpx._main", "uvicorn.supervisors.watchfilesreload")


def defer_unused() -> None:
    """`defer` each of `UNUSED_BY_THE_SERVER` and block each of
    `OPTIONAL_UNUSED_BY_THE_SERVER`: in a serving process only (`tunnelgw/__main__.py` and
    `tunnelgw/worker.py`), never in one that imports tunnelgw as a library (tests, the pytest
    plugin), whose own `import requests` or httpx command line should be the plain one."""
    for name in UNUSED_BY_THE_SERVER:
        defer(name)
    for name in OPTIONAL_UNUSED_BY_THE_SERVER:
        # None in sys.modules makes `import name` raise ImportError (the import system's own
        # convention); never when it is already imported.
        sys.modules.setdefault(name, None)  # type: ignore[arg-type]
