"""`python -m tunnelgw` and the `tunnelgw` command: the command line."""

from __future__ import annotations

import gc
import importlib.util
import os
import sys

from tunnelgw.http import workarounds

# Before the command line imports Connexion (spawned workers do it in tunnelgw/worker.py).
workarounds.defer_unused()

# `TUNNELGW_OPTIMIZE` values that keep `serve` in the interpreter it was started in.
_OFF = frozenset({"0", "false", "no", "off", "f", "n"})


def run() -> int:
    """Start `serve` again under `python -OO` (`optimizes`); else import the command line with
    the cyclic garbage collector paused, then run it.

    Importing the server builds some 300,000 objects that live as long as the process (the
    models, Connexion, SQLAlchemy); the collector's passes over them while they are made are
    about a tenth of start-up, and find next to nothing. It runs again once they are built.
    """
    if optimizes(sys.argv[1:]):
        # The same process id, so a supervisor keeps its handle; the command line as it was
        # typed, interpreter options included. Spawned workers inherit `-OO`.
        os.execv(sys.executable, [sys.executable, "-OO", *sys.orig_argv[1:]])  # noqa: S606
    gc.disable()
    try:
        from tunnelgw.cli import main
    finally:
        gc.enable()
    return main()


def optimizes(args: list[str]) -> bool:
    """Whether this `tunnelgw` process starts again as `python -OO` before it serves.

    Python's `-OO` leaves out docstrings and `assert` statements as it compiles; the
    docstrings of the server's dependencies are ~5 MiB of each worker's memory
    (bench/README.md, issue 31). Only `serve` is started again (the other commands end in
    seconds, and the command line's own help is a docstring), only when these are the
    arguments the process was started with (not when a program calls `run()` with arguments
    of its own), and only when:
    - `TUNNELGW_OPTIMIZE` is not turned off;
    - the interpreter was not started with an optimization level of its own (`-O`, `-OO`,
      `PYTHONOPTIMIZE`), which is kept as it is;
    - `-OO` bytecode is cached or can be: each start would otherwise compile every module
      from source again (~2 s), as where `PYTHONDONTWRITEBYTECODE` is set in an image built
      without that bytecode (`python -OO -m compileall` at build time provides it).
    """
    if args[:1] != ["serve"] or sys.flags.optimize or os.name != "posix":
        return False
    if sys.orig_argv[-len(args) :] != args:
        return False
    if os.environ.get("TUNNELGW_OPTIMIZE", "true").strip().lower() in _OFF:
        return False
    cached = importlib.util.cache_from_source(__file__, optimization=2)
    if os.path.exists(cached):
        return True
    if sys.dont_write_bytecode:
        return False
    folder = os.path.dirname(cached)
    while not os.path.isdir(folder):  # made by the first import that caches bytecode in it
        folder = os.path.dirname(folder)
    return os.access(folder, os.W_OK)


if __name__ == "__main__":
    raise SystemExit(run())
