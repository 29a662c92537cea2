"""Modules imported on first use: `ssh = lazy.module("tunnelgw.crypto.ssh")` behaves like the
module once an attribute is read. The crypto modules load `cryptography` (~8 MiB, ~0.1 s),
which a server that never signs, parses or wraps a key should not pay for at start-up.
Pair it with a `TYPE_CHECKING` import so type checkers see the real module."""

from __future__ import annotations

import importlib
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
