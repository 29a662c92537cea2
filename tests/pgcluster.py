"""A throwaway PostgreSQL cluster for tests: `initdb` into a temp dir, `pg_ctl start` on a free
127.0.0.1 port, a database per use, `pg_ctl stop` at the end. Runs the server binaries as
user `postgres` when we are root (initdb refuses root). Needs Debian's `postgresql`
package (`.ci/run` installs it)."""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path


def _bin_dir() -> Path:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(p.split("/")[4]))
    if found:
        return Path(found[-1])
    initdb = shutil.which("initdb")
    if initdb:
        return Path(initdb).parent
    raise RuntimeError("PostgreSQL server binaries not found: apt-get install -y postgresql")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _as_server_user(argv: list[str]) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *argv] if os.geteuid() == 0 else argv


@contextlib.contextmanager
def cluster() -> Iterator[str]:
    """Start a cluster; yield the base URL `postgresql+psycopg://postgres@127.0.0.1:PORT`."""
    bin_dir = _bin_dir()
    root = Path(tempfile.mkdtemp(prefix="tunnelgw-pg-"))
    data = root / "data"
    if os.geteuid() == 0:
        shutil.chown(root, "postgres")
    port = _free_port()
    run = {"check": True, "capture_output": True}
    subprocess.run(
        _as_server_user(
            [
                str(bin_dir / "initdb"),
                "-D",
                str(data),
                "-A",
                "trust",
                "-U",
                "postgres",
                "--no-sync",
                "-E",
                "UTF8",
            ]
        ),
        **run,
    )
    options = f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c max_connections=200"
    subprocess.run(
        _as_server_user(
            [
                str(bin_dir / "pg_ctl"),
                "-D",
                str(data),
                "-o",
                options,
                "-w",
                "-l",
                str(root / "server.log"),
                "start",
            ]
        ),
        **run,
    )
    try:
        yield f"postgresql+psycopg://postgres@127.0.0.1:{port}"
    finally:
        subprocess.run(
            _as_server_user(
                [str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"]
            ),
            check=False,
            capture_output=True,
        )
        shutil.rmtree(root, ignore_errors=True)


def create_database(base_url: str, name: str) -> str:
    """Create database `name` in the cluster at `base_url`; its URL."""
    import psycopg

    conninfo = base_url.replace("postgresql+psycopg://", "postgresql://") + "/postgres"
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return f"{base_url}/{name}"


if __name__ == "__main__":  # manual use: python -m tests.pgcluster
    with cluster() as url:
        print(create_database(url, "tunnelgw"), flush=True)
        input("PostgreSQL is running; press Enter to stop it.\n")
