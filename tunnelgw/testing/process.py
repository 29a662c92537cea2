"""The server process of `TunnelgwServer`: a free port, its log, and stopping its whole process
group (the parent and its workers) and removing its data directory, exactly once."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import IO

HOST = "127.0.0.1"
LOG_FILE = "server.log"
KEPT_LOG_BYTES = 1 << 20  # log_text() after stop(): the last MiB


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def package_root() -> str:
    """The directory holding the `tunnelgw` package imported here (and its siblings
    `handlers` and `models`)."""
    return str(Path(__file__).absolute().parents[2])


def read_log(path: Path, since: int = 0) -> str:
    try:
        with path.open("rb") as file:
            file.seek(since)
            return file.read().decode(errors="replace")
    except OSError:
        return ""


def log_tail(path: Path) -> tuple[bytes, int]:
    try:
        with path.open("rb") as file:
            size = file.seek(0, os.SEEK_END)
            file.seek(max(0, size - KEPT_LOG_BYTES))
            return file.read(), size
    except OSError:
        return b"", 0


def exited(pid: int) -> bool:
    """Whether `pid` (our child) has exited, without reaping it: while it is a zombie its pid,
    and so its process group id, cannot be reused by another process."""
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


def signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def terminate(proc: subprocess.Popen[bytes], grace: float) -> None:
    """SIGTERM to the process group (parent and workers), SIGKILL after `grace` seconds; then
    SIGKILL to whatever is left of the group (a worker that outlived its parent) and reap."""
    if proc.returncode is None:
        if not exited(proc.pid):
            signal_group(proc.pid, signal.SIGTERM)
            deadline = time.monotonic() + grace
            while not exited(proc.pid) and time.monotonic() < deadline:
                time.sleep(0.05)
        # The leader is a zombie at worst here, so the group id is still ours.
        signal_group(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)


def shutdown(
    owner_pid: int,
    proc: subprocess.Popen[bytes] | None,
    log: IO[bytes] | None,
    data_dir: Path,
    grace: float,
) -> tuple[bytes, int] | None:
    """Stop the server and remove its data directory; runs once (weakref.finalize), from
    stop(), at garbage collection or at interpreter exit. Returns the log's last MiB and
    its size."""
    if os.getpid() != owner_pid:
        return None  # a forked copy of the test process: the server is not its own
    try:
        if proc is not None:
            terminate(proc, grace)
    finally:
        if log is not None:
            log.close()
        kept = log_tail(data_dir / LOG_FILE)
        shutil.rmtree(data_dir, ignore_errors=True)
    return kept
