"""`python -m tunnelgw` and the `tunnelgw` command: the command line."""

from __future__ import annotations

import gc

from tunnelgw.http import workarounds

# Before the command line imports Connexion (spawned workers do it in tunnelgw/worker.py).
workarounds.defer_unused()


def run() -> int:
    """Import the command line with the cyclic garbage collector paused, then run it.

    Importing the server builds some 300,000 objects that live as long as the process (the
    models, Connexion, SQLAlchemy); the collector's passes over them while they are made are
    about a tenth of start-up, and find next to nothing. It runs again once they are built.
    """
    gc.disable()
    try:
        from tunnelgw.cli import main
    finally:
        gc.enable()
    return main()


if __name__ == "__main__":
    raise SystemExit(run())
