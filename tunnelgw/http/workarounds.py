"""Every workaround for a dependency, in one place. Each says what upstream does that makes it
worth having, and which test fails once it is no longer needed (tests/unit/test_workarounds.py).

Two entry points, because the workarounds act at two moments:

- `defer_unused()`: the serving entry points only (`tunnelgw/__main__.py`,
  `tunnelgw/worker.py`), before Connexion is imported. Stand-ins in `sys.modules` for what
  Connexion, httpx and uvicorn import at start-up but the server never runs, so a worker does
  not pay for them in memory and start-up time (upstream: Connexion 3 imports `requests`,
  httpx, Jinja2 and Starlette's test client and templating at import, whatever the app
  uses; spec-first/connexion#1801). `test_each_stand_in_is_still_needed` fails for each
  stand-in once its library stops importing the module. Never in a process that imports
  tunnelgw as a library (tests, the pytest plugin): its own imports stay the plain ones.
- `shipped_spec()`: around each app's `add_api` (`tunnelgw.http.app.create_app`). Connexion
  checks a spec against the OpenAPI schema in every `Specification` it builds (the API's,
  and a copy per base path), with no way to turn it off: about half of an app's start-up
  (spec-first/connexion#1801). The spec is the one shipped with the package, which
  tests/unit/test_spec.py checks with Connexion's own check, so it is skipped while the app
  loads it. `test_connexion_still_checks_every_spec_it_loads` fails once Connexion stops
  checking (the skip can go) or checks through another method (the skip no longer holds).
  Connexion also copies the document twice as it loads it; the app hands over a document of
  its own, resolved in place instead (`test_connexion_still_copies_the_document_it_loads`).

Everywhere else a heavy module is simply imported inside the function that needs it.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType, SimpleNamespace
from typing import Any


class _Deferred(ModuleType):
    """The `sys.modules` entry of a third-party module until its first attribute read (see
    `defer`). It has the real module's `__spec__` and `__name__`, which the import system
    reads to hand it out on `import name`; every other attribute imports the real module
    (replacing this entry) and is read from it."""

    def __getattr__(self, attr: str) -> Any:
        spec = self.__dict__.get("__spec__")
        if attr == "__path__" and spec is not None and spec.submodule_search_locations is None:
            # `from module import name` asks whether it is a package first; a plain module
            # is not, which is known without importing it.
            raise AttributeError(attr)
        return getattr(self._deferred_load(), attr)

    def _deferred_load(self) -> ModuleType:
        """The real module, imported now if it was not yet (replacing this entry)."""
        real: ModuleType | None = self.__dict__.get("_deferred_real")
        if real is None:
            name = self.__name__
            if sys.modules.get(name) is self:
                del sys.modules[name]
            real = importlib.import_module(name)
            self.__dict__["_deferred_real"] = real
        return real


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


class _LaterName:
    """A name `from module import name` bound from a `defer_names` stand-in: the real
    module's object, imported at the first call or attribute read."""

    __slots__ = ("_module", "_name")

    def __init__(self, module: str, name: str) -> None:
        self._module = module
        self._name = name

    def _real(self) -> Any:
        module = sys.modules.get(self._module)
        if isinstance(module, _Deferred):
            module = module._deferred_load()
        elif module is None:
            module = importlib.import_module(self._module)
        return getattr(module, self._name)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._real()(*args, **kwargs)

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._real(), attr)

    def __repr__(self) -> str:
        return f"<deferred {self._module}.{self._name}>"


def defer_names(name: str, names: tuple[str, ...]) -> None:
    """`defer` for a module a dependency imports *names* from at start-up (`from name import
    X`): reading one of `names` from the stand-in gives a `_LaterName`, which imports the real
    module when it is first called or read; any other attribute imports it at once. No-op when
    `name` is already imported or not installed."""
    defer(name)
    stand_in = sys.modules.get(name)
    if isinstance(stand_in, _Deferred) and "_deferred_real" not in stand_in.__dict__:
        for attr in names:
            setattr(stand_in, attr, _LaterName(name, attr))


# Imported by a dependency at start-up, never run by the server: Connexion imports `requests`
# to fetch remote `$ref`s (openapi.yaml has none) and httpx for OAuth token introspection
# (the API uses bearer API keys).
# Jinja2 too, which Connexion imports to render specs given as templates (ours is not one) and
# for its Swagger UI page (built at the first request for the docs: tunnelgw.http.routing).
UNUSED_BY_THE_SERVER = ("requests", "httpx", "jinja2")
# Imported from (`from module import name`) by a dependency at start-up, never run by the
# server until a path it rarely or never takes: Connexion's app imports Starlette's
# `TestClient` (and with it httpx, ~1.7 MiB and ~30 modules) for its `test_client()`, its
# Swagger UI Starlette's `Jinja2Templates` (and with it Jinja2, ~2 MiB).
NAMES_UNUSED_BY_THE_SERVER = {
    "starlette.testclient": ("TestClient",),
    "starlette.templating": ("Jinja2Templates",),
}

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
    for name, names in NAMES_UNUSED_BY_THE_SERVER.items():
        defer_names(name, names)
    for name in UNUSED_BY_THE_SERVER:
        defer(name)
    for name in OPTIONAL_UNUSED_BY_THE_SERVER:
        # None in sys.modules makes `import name` raise ImportError (the import system's own
        # convention); never when it is already imported.
        sys.modules.setdefault(name, None)  # type: ignore[arg-type]


@contextmanager
def shipped_spec() -> Iterator[None]:
    """Connexion's check of a spec against the OpenAPI schema skipped while the app loads the
    spec shipped with the package (see the module's docstring), and its two copies of the
    document handed to it: one it keeps as the raw spec (read again only to serve the docs at
    another base path) and one it resolves the `$ref`s of. The caller hands over a document
    of its own, made for this load (`tunnelgw.core.spec.load`), so both are that document:
    resolved in place, it is the raw spec too, and resolving it again (the docs) finds
    nothing to do. The copies were ~12 ms of a start and ~2 MiB of every worker. Restored
    after."""
    from connexion import json_schema
    from connexion import spec as connexion_spec
    from connexion.spec import OpenAPISpecification

    own = OpenAPISpecification.__dict__.get("_validate_spec")  # inherited in Connexion 3.3
    copying = connexion_spec.copy, json_schema.deepcopy
    OpenAPISpecification._validate_spec = classmethod(lambda _cls, _spec: None)
    connexion_spec.copy = _NOT_COPIED
    json_schema.deepcopy = _same
    try:
        yield
    finally:
        connexion_spec.copy, json_schema.deepcopy = copying
        if own is None:
            del OpenAPISpecification._validate_spec
        else:
            OpenAPISpecification._validate_spec = own


def _same(value: Any, memo: Any = None) -> Any:
    """`copy.deepcopy` for a document the caller hands over (`shipped_spec`)."""
    return value


# What `connexion.spec` reads from the `copy` module (`copy.deepcopy`) in `shipped_spec`.
_NOT_COPIED = SimpleNamespace(deepcopy=_same)
