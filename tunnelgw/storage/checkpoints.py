"""SQLite checkpoints in a thread of their own, off the event loop.

In WAL mode a commit appends the pages it changed to the `-wal` file, and a checkpoint copies
them back into the database file, syncing both (with `synchronous=NORMAL`, the only syncs
there are). SQLite runs one by itself in the connection that commits once the WAL holds
`wal_autocheckpoint` pages (1,000 by default): here the writer connection, inline on the
event loop, where every request in flight waits for the copy and its two `fsync`s
(bench/README.md, issue 31, fifteenth round: 1 commit in ~130 under the journal's load, up to
4 ms each on the benchmark machine's disk, more on a slow one).

A `Checkpointer` takes that work off the loop. The writer tells it of each commit
(`committed`: a flag read, and once per checkpoint a flag set), and its thread, on a
connection of its own, runs a passive checkpoint (`PRAGMA wal_checkpoint(PASSIVE)`: it
copies what no reader still needs, without waiting for or blocking readers or writers) at
most once per `interval` while commits come, none while none do. SQLite releases the GIL
while it copies and syncs.

The writer keeps its own automatic checkpoint, raised to `BACKSTOP_PAGES`, and it is still
what rewinds the WAL: SQLite writes the WAL from its start again only when a write begins
with every frame copied, which a checkpoint running beside a steady stream of commits seldom
leaves. Under steady writes the `-wal` file therefore grows to about `BACKSTOP_PAGES` pages
(~40 MiB) before the writer's checkpoint, which then finds nearly every page copied, rewinds
it; between writes the thread's checkpoint leaves every frame copied and the next write
rewinds it. Readers are not slowed by the longer file: they look up only the frames not yet
copied. Keeping SQLite's 1,000 pages instead (the thread copying ahead every 0.1 or 0.5 s)
left the writer's checkpoints as long as before (bench/README.md, fifteenth round).
"""

from __future__ import annotations

import logging
import sqlite3
import threading

log = logging.getLogger("tunnelgw")

# The writer connection's own automatic checkpoint (`PRAGMA wal_autocheckpoint`, in pages): it
# rewinds a WAL that steady writes have grown to ~40 MiB (4 KiB pages), and bounds it should
# the thread fall behind or fail.
BACKSTOP_PAGES = 10_000
# The least time between two checkpoints (seconds): the commits of that time share one, and
# its two syncs.
INTERVAL = 0.5
_CHECKPOINT = "PRAGMA wal_checkpoint(PASSIVE)"


class Checkpointer:
    """The checkpoints of one SQLite database file (`path`) in this process. `committed` is
    called by the writer after each commit; `close` stops the thread (the database's last
    connection to close then checkpoints what is left, as SQLite does)."""

    def __init__(self, path: str, interval: float = INTERVAL) -> None:
        self.path = path
        self.interval = interval
        self.checkpoints = 0  # run by the thread so far
        self._due = threading.Event()  # a commit since the last checkpoint began
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._run, name="tunnelgw-sqlite-checkpoints", daemon=True
        )
        self._thread.start()

    def committed(self) -> None:
        """The writer committed: a checkpoint is due within `interval`."""
        if not self._due.is_set():
            self._due.set()

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def close(self, timeout: float = 5.0) -> None:
        """Stop the thread, waiting for a checkpoint under way (at most `timeout` seconds)."""
        self._stop.set()
        self._due.set()
        self._thread.join(timeout)

    def _run(self) -> None:
        try:
            connection = sqlite3.connect(self.path, isolation_level=None)
        except sqlite3.Error:
            log.exception("no checkpoint thread for %s: the writer checkpoints", self.path)
            return
        try:
            connection.execute("PRAGMA busy_timeout=5000")
            while not self._stop.is_set():
                self._due.wait()
                # The commits of the next `interval` join this checkpoint (a stop ends the wait).
                if self._stop.wait(self.interval):
                    break
                self._due.clear()
                self._checkpoint(connection)
        finally:
            connection.close()

    def _checkpoint(self, connection: sqlite3.Connection) -> None:
        try:
            connection.execute(_CHECKPOINT).fetchall()
        except sqlite3.Error as exc:  # a full disk, say: the next commit tries again
            log.warning("checkpoint of %s failed: %s", self.path, exc)
        else:
            self.checkpoints += 1
