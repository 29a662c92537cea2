"""The processes the benchmark starts: how to start each server, wait for it, measure its
start-up and memory, and stop it by pid (terminate, then kill), also on errors and Ctrl-C.

Every server listens on 127.0.0.1 only, on a port picked free just before it starts.
"""

from __future__ import annotations

import contextlib
import http.client
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
REPO_DIR = BENCH_DIR.parent
SPEC_FILE = REPO_DIR / "openapi.yaml"
HOST = "127.0.0.1"
READY_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 15.0
POLL_INTERVAL_S = 0.01

PRISM_PACKAGE = "@stoplight/prism-cli@5"
PRISM_INSTALL_TIMEOUT_S = 300


@dataclass
class Server:
    """A server process we started, and where to reach it."""

    name: str
    process: subprocess.Popen[bytes]
    port: int
    log_path: Path

    @property
    def base_url(self) -> str:
        return f"http://{HOST}:{self.port}"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


# --- stopping -----------------------------------------------------------------------------


def descendants(pid: int) -> list[int]:
    """Pids of every process below `pid` (read from /proc)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = [], [pid]
    while todo:
        kids = children.get(todo.pop(), [])
        found.extend(kids)
        todo.extend(kids)
    return found


def stop_process(process: subprocess.Popen[bytes]) -> None:
    """Terminate `process` (kill it after a timeout), then kill any child left behind."""
    kids = descendants(process.pid)
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    for pid in kids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def log_tail(path: Path, lines: int = 30) -> str:
    with contextlib.suppress(OSError):
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    return ""


# --- starting -----------------------------------------------------------------------------


def probe(port: int, path: str, timeout: float = 2.0) -> int | None:
    """The status of `GET path` on our port, or None if nothing answers."""
    conn = http.client.HTTPConnection(HOST, port, timeout=timeout)
    try:
        conn.request("GET", path)
        return conn.getresponse().status
    except (OSError, http.client.HTTPException):
        return None
    finally:
        conn.close()


def wait_ready(server: Server, path: str, timeout: float = READY_TIMEOUT_S) -> float:
    """Poll `path` until it answers 200; the seconds it took. Fails if the process exits."""
    started = time.monotonic()
    deadline = started + timeout
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise RuntimeError(f"{server.name} exited early:\n{log_tail(server.log_path)}")
        if probe(server.port, path) == 200:
            return time.monotonic() - started
        time.sleep(POLL_INTERVAL_S)
    raise RuntimeError(f"{server.name} not ready in {timeout:.0f}s:\n{log_tail(server.log_path)}")


def user_environ() -> dict[str, str]:
    """This process's environment as a user's would be: bytecode cached (a shell may set
    PYTHONDONTWRITEBYTECODE, as this sandbox does, which would make every start compile the
    project again)."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def start(
    name: str, command: list[str], env: dict[str, str], log_path: Path, cwd: Path = REPO_DIR
) -> Server:
    """Start `command`, which listens on the port given after its `--port`/`-p` flag."""
    flag = "--port" if "--port" in command else "-p"
    port = int(command[command.index(flag) + 1])
    environ = user_environ()
    with log_path.open("ab") as log:
        process = subprocess.Popen(
            command,
            cwd=cwd,
            env={**environ, **env},
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # Ctrl-C reaches only us; we stop the server ourselves
        )
    return Server(name, process, port, log_path)


@contextlib.contextmanager
def serving(
    name: str,
    command: list[str],
    env: dict[str, str],
    log_path: Path,
    ready_path: str,
    cwd: Path = REPO_DIR,
) -> Iterator[Server]:
    """Start a server, wait until `ready_path` answers 200, yield it, stop it."""
    server = start(name, command, env, log_path, cwd)
    try:
        wait_ready(server, ready_path)
        yield server
    finally:
        stop_process(server.process)


def startup_seconds(
    command: list[str], env: dict[str, str], log_path: Path, cwd: Path = REPO_DIR
) -> float:
    """Wall time from starting `command` to its `/readyz` answering 200; stops it after."""
    started = time.monotonic()
    server = start("tunnelgw (start-up)", command, env, log_path, cwd)
    try:
        wait_ready(server, "/readyz")
        return time.monotonic() - started
    finally:
        stop_process(server.process)


# --- commands -----------------------------------------------------------------------------


def tunnelgw_command(
    workers: int, data_dir: Path, database_url: str | None = None, python: str = sys.executable
) -> list[str]:
    command = [
        *(python, "-m", "tunnelgw", "serve"),
        *("--host", HOST, "--port", str(free_port())),
        *("--workers", str(workers), "--data-dir", str(data_dir)),
    ]
    if database_url:
        command += ["--database-url", database_url]
    return command


def uvicorn_command(factory: str, workers: int) -> list[str]:
    """uvicorn on a factory of bench/reference_app.py, with uvicorn's defaults otherwise (the
    same event loop and HTTP parser tunnelgw gets)."""
    return [
        *(sys.executable, "-m", "uvicorn", "--factory", "--app-dir", str(BENCH_DIR)),
        *("--host", HOST, "--port", str(free_port()), "--workers", str(workers)),
        *("--no-access-log", "--log-level", "warning", f"reference_app:{factory}"),
    ]


def prism_command(prism: Path) -> list[str]:
    """Prism mocking our openapi.yaml: static examples, violations only logged (`--errors`
    would turn the example's `Operation-Id: string` header into a 500 on every answer), and
    logging at `error`, which prints nothing per valid request (its best case)."""
    return [
        *(str(prism), "mock", "--host", HOST, "-p", str(free_port())),
        *("--errors=false", "--verboseLevel", "error", str(SPEC_FILE)),
    ]


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "tunnelgw-bench"


def ensure_prism() -> tuple[Path | None, str]:
    """Prism's executable, installed with npm into the cache folder (outside the repo, reused
    across runs) on first use; or None and the reason it is not available."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        return None, "node/npm not found (Debian: apt-get install nodejs npm)"
    folder = cache_dir() / "prism"
    prism = folder / "node_modules" / ".bin" / "prism"
    if prism.exists():
        return prism, f"cached in {folder}"
    folder.mkdir(parents=True, exist_ok=True)
    print(f"  installing {PRISM_PACKAGE} with npm into {folder} (once) ...", flush=True)
    command = ["npm", "install", "--prefix", str(folder), "--no-audit", "--no-fund"]
    try:
        done = subprocess.run(
            [*command, "--loglevel=error", PRISM_PACKAGE],
            capture_output=True,
            text=True,
            timeout=PRISM_INSTALL_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return None, f"npm install timed out after {PRISM_INSTALL_TIMEOUT_S}s"
    if done.returncode != 0 or not prism.exists():
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        return None, f"npm install {PRISM_PACKAGE} failed: {' / '.join(tail)}"
    return prism, f"installed into {folder}"


def prism_version(prism: Path) -> str:
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        done = subprocess.run(
            [str(prism), "--version"], capture_output=True, text=True, timeout=30, check=False
        )
        return done.stdout.strip()
    return "?"


# --- memory -------------------------------------------------------------------------------


@dataclass
class ProcessMemory:
    pid: int
    role: str  # "worker", "supervisor" or "helper"
    rss_mib: float


def _status_rss_kib(pid: int) -> int | None:
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return None


def _cmdline(pid: int) -> str:
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    return ""


def memory(server: Server) -> list[ProcessMemory]:
    """VmRSS of the server's processes. With one worker uvicorn serves in the main process;
    with more, the workers are the children multiprocessing spawned (`spawn_main`), the main
    process supervises, and multiprocessing's resource tracker is a helper."""
    kids = descendants(server.process.pid)
    workers = [pid for pid in kids if "spawn_main" in _cmdline(pid)]
    found = []
    for pid in [server.process.pid, *kids]:
        rss = _status_rss_kib(pid)
        if rss is None:
            continue
        if pid == server.process.pid:
            role = "supervisor" if workers else "worker"
        else:
            role = "worker" if pid in workers else "helper"
        found.append(ProcessMemory(pid, role, round(rss / 1024, 1)))
    return found
