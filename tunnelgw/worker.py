"""The app factory as `tunnelgw serve` hands it to uvicorn (`tunnelgw.worker:create_app`):
each server process, the spawned workers of `--workers N` included, imports this module
first, so the modules the server never runs are deferred (`workarounds.defer_unused`) before
Connexion is imported.

The cyclic garbage collector is paused from here (and in `tunnelgw serve` from before
uvicorn is imported) until the app is built, for the reason given in `tunnelgw.__main__`;
then what was built is frozen (`gc.freeze`: moved out of the collector's generations), so
its passes while serving no longer walk the ~300,000 objects that live as long as the
process, and the collector runs again. The app's lifespan then collects and freezes what its
start built (`tunnelgw.http.app`), a pass over those few objects only. The price: the cyclic
garbage the imports left (~2,300 objects, ~1 MiB) is frozen with them rather than collected;
a collection here would cost ~0.1 s of every start (bench/README.md, issue 31).
"""

from __future__ import annotations

import gc

from tunnelgw.http import workarounds

gc.disable()
workarounds.defer_unused()

from connexion import AsyncApp  # noqa: E402 - after the deferral, on purpose

from tunnelgw.http import app  # noqa: E402

__all__ = ["create_app"]


def create_app() -> AsyncApp:
    """`tunnelgw.http.app.create_app()`, then the start-up's objects frozen."""
    try:
        return app.create_app()
    finally:
        gc.freeze()
        gc.enable()
