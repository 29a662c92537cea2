"""Benchmark harness: tunnelgw's full stack against a bare Starlette reference, under wrk.

For each worker count it starts `tunnelgw serve` on a fresh data dir, seeds rows through the
API, and runs bounded wrk runs for three scenarios (GET by id over ~100 seeded ids, list
with limit=100, create). Then it starts bench/reference_app.py (bare Starlette, same async
SQLAlchemy + aiosqlite stack, same table and row count) with the same worker count and runs
the GET-by-id scenario against it. It prints a table and writes bench/results/latest.json.

Only 127.0.0.1 is used; every server is stopped by pid (terminate, then kill) even on errors
or Ctrl-C. See bench/README.md.

    python bench/run.py [--duration 10] [--connections 32] [--threads 2] [--workers 1,2]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

BENCH_DIR = Path(__file__).resolve().parent
REPO_DIR = BENCH_DIR.parent
LUA_SCRIPT = BENCH_DIR / "scenario.lua"
RESULTS_FILE = BENCH_DIR / "results" / "latest.json"
HOST = "127.0.0.1"
API_PATH = "/backends/http_response"
CREATE_BODY = {
    "description": "bench",
    "body": "hello",
    "headers": {"Content-Type": "text/plain"},
    "status_code": 200,
}
ROTATING_IDS = 100  # ids the GET-by-id scenario cycles through
OUR_SCENARIOS = ("get", "list", "create")
STARTUP_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 15.0
WRK_SLACK_S = 30  # wrk's own time limit beyond the run's duration


@dataclass
class Server:
    """A server process we started, and where to reach it."""

    name: str
    process: subprocess.Popen[bytes]
    base_url: str
    log_path: Path


@dataclass
class Result:
    """One wrk run."""

    scenario: str
    server: str
    workers: int
    requests: int
    rps: float
    p50_ms: float
    p90_ms: float
    p99_ms: float
    mean_ms: float
    max_ms: float
    non_2xx: int
    socket_errors: int
    non_2xx_sample: str
    socket_error_detail: dict[str, int]


# --- command line -------------------------------------------------------------------------


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=int, default=10, help="seconds per wrk run (10)")
    parser.add_argument("--warmup", type=int, default=2, help="warm-up seconds per server (2)")
    parser.add_argument("--connections", type=int, default=32, help="wrk connections (32)")
    parser.add_argument(
        "--threads", type=int, default=min(2, os.cpu_count() or 1), help="wrk threads (2)"
    )
    parser.add_argument("--workers", default="1,2", help="worker counts, comma-separated (1,2)")
    parser.add_argument("--rows", type=int, default=1000, help="rows to seed (1000)")
    parser.add_argument("--output", type=Path, default=RESULTS_FILE, help="JSON results file")
    args = parser.parse_args(argv)
    args.worker_counts = [int(n) for n in args.workers.split(",") if n.strip()]
    if args.rows < 1 or args.duration < 1 or not args.worker_counts:
        parser.error("--rows, --duration and --workers must be positive")
    if args.connections < args.threads:
        parser.error("--connections must be at least --threads (wrk's rule)")
    return args


# --- processes ----------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


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
    """Terminate `process` (kill it after a timeout), then any of its children left behind."""
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


def wait_healthy(server: Server) -> None:
    """Poll /healthz until it answers 200; fail if the process exits or time runs out."""
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise RuntimeError(f"{server.name} exited early:\n{log_tail(server.log_path)}")
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(f"{server.base_url}/healthz", timeout=2).status_code == 200:
                return
        time.sleep(0.2)
    raise RuntimeError(f"{server.name} not healthy in time:\n{log_tail(server.log_path)}")


@contextlib.contextmanager
def serving(name: str, command: list[str], env: dict[str, str], workdir: Path) -> Iterator[Server]:
    """Start `command` (which must listen on the port in its arguments), yield, stop it."""
    port = command[command.index("--port") + 1]
    log_path = workdir / f"{name}.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            command,
            cwd=REPO_DIR,
            env={**os.environ, **env},
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # Ctrl-C reaches only us; we stop the server ourselves
        )
    server = Server(name, process, f"http://{HOST}:{port}", log_path)
    try:
        wait_healthy(server)
        yield server
    finally:
        stop_process(process)


# --- servers and seeding ------------------------------------------------------------------


def our_command(workers: int, data_dir: Path) -> list[str]:
    return [
        *(sys.executable, "-m", "tunnelgw", "serve"),
        *("--host", HOST, "--port", str(free_port())),
        *("--workers", str(workers), "--data-dir", str(data_dir)),
    ]


def reference_command(workers: int) -> list[str]:
    return [
        *(sys.executable, "-m", "uvicorn", "--factory", "--app-dir", str(BENCH_DIR)),
        *("--host", HOST, "--port", str(free_port()), "--workers", str(workers)),
        *("--no-access-log", "reference_app:create_app"),
    ]


def api_headers(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}", "Service-Version": "2"}


def seed_via_api(base_url: str, token: str, rows: int) -> list[str]:
    """Create `rows` backends through the API (one request each); their ids."""
    created = []
    with httpx.Client(base_url=base_url, headers=api_headers(token), timeout=10) as client:
        for _ in range(rows):
            response = client.post(API_PATH, json=CREATE_BODY)
            if response.status_code != 201:
                raise RuntimeError(f"seeding failed: {response.status_code} {response.text}")
            created.append(response.json()["id"])
    return created


async def seed_database(db_path: Path, rows: int) -> list[str]:
    """The project's schema in a fresh SQLite file, one account and `rows` backends."""
    from models import Account, HttpResponseBackend
    from tunnelgw import ids
    from tunnelgw.db import Database

    database = Database(f"sqlite:///{db_path}")
    try:
        await database.create_schema()
        async with database.write() as session:
            account = Account.new(id=ids.new_id(Account.PREFIX), name="bench")
            session.add(account)
            await session.flush()
            backends = [
                HttpResponseBackend.new(
                    id=ids.new_id(HttpResponseBackend.PREFIX),
                    account_id=account.id,
                    description="bench",
                    body="hello",
                    headers={"content-type": "text/plain"},
                    status_code=200,
                )
                for _ in range(rows)
            ]
            session.add_all(backends)
    finally:
        await database.dispose()
    return [backend.id for backend in backends]


def write_rotating_ids(all_ids: list[str], path: Path) -> Path:
    """~ROTATING_IDS ids spread evenly over the seeded ones, one per line."""
    step = max(1, len(all_ids) // ROTATING_IDS)
    path.write_text("\n".join(all_ids[::step][:ROTATING_IDS]) + "\n")
    return path


# --- wrk ----------------------------------------------------------------------------------


def wrk_json(stdout: str) -> dict[str, Any]:
    for line in stdout.splitlines():
        if line.startswith("BENCH_JSON "):
            data: dict[str, Any] = json.loads(line.removeprefix("BENCH_JSON "))
            return data
    raise RuntimeError(f"no BENCH_JSON line in wrk output:\n{stdout}")


def run_wrk(args: argparse.Namespace, url: str, mode: str, extra: dict[str, Any]) -> dict[str, Any]:
    """One bounded wrk run of scenario `mode`; the numbers printed by the Lua done()."""
    command = [
        *("wrk", f"--threads={args.threads}", f"--connections={args.connections}"),
        *(f"--duration={extra['duration']}s", "--timeout=5s", f"--script={LUA_SCRIPT}"),
        *(url, "--", mode, str(extra["ids_file"])),
    ]
    done = subprocess.run(
        command,
        env={**os.environ, "BENCH_TOKEN": extra["token"]},
        capture_output=True,
        text=True,
        timeout=extra["duration"] + WRK_SLACK_S,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"wrk failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return wrk_json(done.stdout)


def to_result(scenario: str, server: str, workers: int, data: dict[str, Any]) -> Result:
    latency = data["latency_us"]
    return Result(
        scenario=scenario,
        server=server,
        workers=workers,
        requests=data["requests"],
        rps=round(data["requests"] / (data["duration_us"] / 1e6), 1),
        p50_ms=latency["p50"] / 1000,
        p90_ms=latency["p90"] / 1000,
        p99_ms=latency["p99"] / 1000,
        mean_ms=round(latency["mean"] / 1000, 3),
        max_ms=latency["max"] / 1000,
        non_2xx=data["non_2xx"],
        socket_errors=sum(data["socket_errors"].values()),
        non_2xx_sample=data["non_2xx_sample"],
        socket_error_detail=data["socket_errors"],
    )


def measure(
    args: argparse.Namespace, server: Server, workers: int, scenarios: tuple[str, ...], wrk: dict
) -> list[Result]:
    """A discarded warm-up run, then one measured run per scenario."""
    if args.warmup > 0:
        run_wrk(args, server.base_url, "get", {**wrk, "duration": args.warmup})
    results = []
    for scenario in scenarios:
        print(f"  {server.name}, {workers} worker(s): {scenario} ...", flush=True)
        data = run_wrk(args, server.base_url, scenario, {**wrk, "duration": args.duration})
        results.append(to_result(scenario, server.name, workers, data))
    return results


# --- one worker count ---------------------------------------------------------------------


def bench_ours(args: argparse.Namespace, workers: int, workdir: Path) -> list[Result]:
    token = "tgw_bench" + secrets.token_hex(16)
    env = {"TUNNELGW_BOOTSTRAP_TOKEN": token}
    with serving("tunnelgw", our_command(workers, workdir / "data"), env, workdir) as server:
        started = time.monotonic()
        seeded = seed_via_api(server.base_url, token, args.rows)
        print(f"  seeded {len(seeded)} rows via the API in {time.monotonic() - started:.1f}s")
        ids_file = write_rotating_ids(seeded, workdir / "ours-ids.txt")
        wrk = {"token": token, "ids_file": ids_file}
        return measure(args, server, workers, OUR_SCENARIOS, wrk)


def bench_reference(args: argparse.Namespace, workers: int, workdir: Path) -> list[Result]:
    db_path = workdir / "reference.db"
    seeded = asyncio.run(seed_database(db_path, args.rows))
    ids_file = write_rotating_ids(seeded, workdir / "reference-ids.txt")
    env = {"BENCH_REFERENCE_DB": str(db_path)}
    with serving("reference", reference_command(workers), env, workdir) as server:
        wrk = {"token": "unused", "ids_file": ids_file}
        return measure(args, server, workers, ("get",), wrk)


def bench_workers(args: argparse.Namespace, workers: int) -> list[Result]:
    print(f"== {workers} worker(s)", flush=True)
    with tempfile.TemporaryDirectory(prefix="tunnelgw-bench-") as tmp:
        ours = bench_ours(args, workers, Path(tmp))
        return ours + bench_reference(args, workers, Path(tmp))


# --- report -------------------------------------------------------------------------------


def ratios(results: list[Result]) -> list[dict[str, Any]]:
    """ours/reference for GET by id, per worker count."""
    found = []
    gets = {(r.server, r.workers): r for r in results if r.scenario == "get"}
    for (server, workers), ours in gets.items():
        ref = gets.get(("reference", workers))
        if server != "tunnelgw" or ref is None:
            continue
        found.append(
            {
                "workers": workers,
                "rps_ratio": round(ours.rps / ref.rps, 3) if ref.rps else None,
                "p50_ratio": round(ours.p50_ms / ref.p50_ms, 3) if ref.p50_ms else None,
                "p99_ratio": round(ours.p99_ms / ref.p99_ms, 3) if ref.p99_ms else None,
            }
        )
    return found


def table(results: list[Result], found_ratios: list[dict[str, Any]]) -> str:
    head = ("scenario", "server", "workers", "req/s", "p50 ms", "p99 ms", "non-2xx", "sock err")
    rows = [
        (
            r.scenario,
            r.server,
            r.workers,
            f"{r.rps:.0f}",
            f"{r.p50_ms:.2f}",
            f"{r.p99_ms:.2f}",
            r.non_2xx,
            r.socket_errors,
        )
        for r in results
    ]
    widths = [max(len(str(row[i])) for row in [head, *rows]) for i in range(len(head))]
    lines = ["  ".join(str(v).rjust(w) for v, w in zip(row, widths, strict=True)) for row in rows]
    header = "  ".join(h.rjust(w) for h, w in zip(head, widths, strict=True))
    lines = [header, "-" * len(header), *lines, ""]
    for r in found_ratios:
        lines.append(
            f"GET by id, {r['workers']} worker(s), tunnelgw/reference: "
            f"req/s x{r['rps_ratio']}, p50 x{r['p50_ratio']}, p99 x{r['p99_ratio']}"
        )
    return "\n".join(lines)


def machine(load_at_start: float) -> dict[str, Any]:
    meminfo = Path("/proc/meminfo").read_text().splitlines()[0].split()
    wrk = subprocess.run(["wrk", "--version"], capture_output=True, text=True, check=False)
    return {
        "cpus": os.cpu_count(),
        "mem_total_kib": int(meminfo[1]),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "wrk": wrk.stdout.splitlines()[0] if wrk.stdout else "?",
        "loadavg_1m_at_start": round(load_at_start, 2),
        "loadavg_1m_at_end": round(os.getloadavg()[0], 2),
    }


def warn_if_busy() -> float:
    """The figures are only comparable on an otherwise idle machine; say so if it is not."""
    load = os.getloadavg()[0]
    if load > 0.5 * (os.cpu_count() or 1):
        print(
            f"bench: WARNING: 1-minute load average is {load:.2f} before starting; other "
            "processes will skew the figures.",
            file=sys.stderr,
        )
    return load


def git_state() -> dict[str, Any]:
    """The commit benchmarked, and whether files outside bench/ had uncommitted changes."""

    def git(*argv: str) -> str:
        done = subprocess.run(
            ["git", *argv], cwd=REPO_DIR, capture_output=True, text=True, check=False
        )
        return done.stdout.strip()

    return {
        "commit": git("rev-parse", "HEAD"),
        "dirty": bool(git("status", "--porcelain", "--", ".", ":!bench")),
    }


def write_json(
    args: argparse.Namespace, results: list[Result], found: list[dict], load_at_start: float
) -> None:
    settings = {k: v for k, v in vars(args).items() if k not in ("output", "worker_counts")}
    report = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": shlex.join(["python", *sys.argv]),
        "machine": machine(load_at_start),
        "git": git_state(),
        "settings": settings,
        "results": [asdict(r) for r in results],
        "ratios": found,
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2) + "\n")


def report_failures(results: list[Result]) -> bool:
    """Print every run with non-2xx responses or socket errors; whether there were any."""
    bad = [r for r in results if r.non_2xx or r.socket_errors]
    for r in bad:
        print(
            f"WARNING: {r.scenario} on {r.server} ({r.workers} worker(s)): "
            f"{r.non_2xx} non-2xx, socket errors {r.socket_error_detail}; "
            f"first non-2xx: {r.non_2xx_sample or '-'}",
            file=sys.stderr,
        )
    return bool(bad)


def _interrupt(_signum: int, _frame: Any) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    if shutil.which("wrk") is None:
        print(
            "bench: wrk not found. Install it (Debian/Ubuntu: apt-get install wrk) and retry.",
            file=sys.stderr,
        )
        return 2
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, _interrupt)  # stop our servers on SIGTERM as on Ctrl-C
    load_at_start = warn_if_busy()
    results: list[Result] = []
    try:
        for workers in args.worker_counts:
            results.extend(bench_workers(args, workers))
    except KeyboardInterrupt:
        print("bench: interrupted; servers stopped.", file=sys.stderr)
        return 130
    found = ratios(results)
    print()
    print(table(results, found))
    write_json(args, results, found, load_at_start)
    print(f"\nresults written to {args.output}")
    return 1 if report_failures(results) else 0


if __name__ == "__main__":
    sys.exit(main())
