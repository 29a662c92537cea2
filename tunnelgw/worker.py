"""The app factory as `tunnelgw serve` hands it to uvicorn (`tunnelgw.worker:create_app`):
each server process, the spawned workers of `--workers N` included, imports this module
first, so the modules the server never runs are deferred (`workarounds.defer_unused`) before
Connexion is imported."""

from __future__ import annotations

from tunnelgw.http import workarounds

workarounds.defer_unused()

from tunnelgw.http.app import create_app  # noqa: E402 - after the deferral, on purpose

__all__ = ["create_app"]
