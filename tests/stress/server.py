"""Start and stop real `tunnelgw serve` processes for the stress tests (127.0.0.1 only)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import httpx

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Server:
    """One `tunnelgw serve` process group on a database, with the admin token."""

    data_dir: Path
    database_url: str | None
    token: str
    workers: int = 2
    public_url: str | None = None
    env: dict[str, str] = field(default_factory=dict)  # further TUNNELGW_* settings
    port: int = 0
    proc: subprocess.Popen[bytes] | None = None
    _log: BinaryIO | None = None

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 60) -> None:
        """Start (or restart on the same port, as a real deployment would)."""
        self.port = self.port or free_port()
        env = {
            **os.environ,
            "TUNNELGW_BOOTSTRAP_TOKEN": self.token,
            "TUNNELGW_DATA_DIR": str(self.data_dir),
            "TUNNELGW_LOG_LEVEL": os.environ.get("TUNNELGW_STRESS_LOG_LEVEL", "warning"),
        }
        env.pop("PROMETHEUS_MULTIPROC_DIR", None)
        if self.database_url:
            env["TUNNELGW_DATABASE_URL"] = self.database_url
        if self.public_url:
            env["TUNNELGW_PUBLIC_URL"] = self.public_url
        env.update(self.env)
        self._close_log()
        self._log = log = (self.data_dir / "server.log").open("ab")
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tunnelgw",
                "serve",
                "--port",
                str(self.port),
                "--workers",
                str(self.workers),
            ],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=ROOT,
            start_new_session=True,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited:\n{self.log()}")
            try:
                if httpx.get(f"{self.base}/readyz", timeout=1).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.2)
        self.kill()
        raise RuntimeError(f"server did not become ready:\n{self.log()}")

    def stop(self) -> None:
        """SIGTERM (graceful: in-flight requests finish), then wait."""
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=40)
            except subprocess.TimeoutExpired:
                self.kill()
        self._close_log()

    def kill(self) -> None:
        """SIGKILL to the whole process group (parent and workers): a crash."""
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=20)
        self._close_log()

    def _close_log(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None

    def log(self) -> str:
        return (self.data_dir / "server.log").read_text(errors="replace")

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}", "Service-Version": "2"}

    def client(self, **options: Any) -> httpx.AsyncClient:
        """An async client of the server, as its admin (60 s timeout unless `options` say)."""
        options.setdefault("timeout", 60)
        return httpx.AsyncClient(base_url=self.base, headers=self.headers(), **options)
