"""Load generators: `wrk` (bench/scenario.lua) for the real figures, and a small bounded
asyncio HTTP/1.1 client for `--smoke` and machines without wrk.

Both run a `Load` (GETs rotating over a list of paths, or one POST repeated) over N
keep-alive connections for a fixed time, and return the same `Stats`. Every run is bounded
in time (and the Python one in request count too).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from servers import BENCH_DIR, HOST

LUA_SCRIPT = BENCH_DIR / "scenario.lua"
WRK_SLACK_S = 30  # wrk's own time limit beyond the run's duration
WRK_INSTALL_HINT = "install it (Debian/Ubuntu: apt-get install wrk)"
REQUEST_TIMEOUT_S = 5.0
MAX_PYTHON_REQUESTS = 2_000_000  # the Python generator's count bound per run
SAMPLE_CHARS = 300


@dataclass(frozen=True)
class Load:
    """What to send: GET of each path in turn, or POST `body` to `paths[0]`; with
    `write_every` N and `write_path`, GETs of `paths` with a POST of `body` to `write_path`
    in place of every Nth request (reads with writes interleaved)."""

    paths: tuple[str, ...]
    token: str = ""
    body: bytes | None = None  # a POST when set
    write_every: int = 0
    write_path: str = ""

    @property
    def method(self) -> str:
        return "GET" if self.body is None or self.write_every else "POST"

    def requests(self) -> list[tuple[str, str, bytes | None]]:
        """(method, path, body) of each request in the order they are sent."""
        if not self.write_every:
            return [(self.method, path, self.body) for path in self.paths]
        sent: list[tuple[str, str, bytes | None]] = []
        for index, path in enumerate(self.paths):
            if index % (self.write_every - 1) == 0:
                sent.append(("POST", self.write_path, self.body))
            sent.append(("GET", path, None))
        return sent


@dataclass(frozen=True)
class Shape:
    """How hard and how long."""

    duration: float
    connections: int
    threads: int = 1


@dataclass
class Stats:
    """One bounded run: throughput, latency percentiles (ms) and failures."""

    requests: int
    seconds: float
    p50_ms: float
    p90_ms: float
    p99_ms: float
    mean_ms: float
    max_ms: float
    non_2xx: int
    errors: int
    sample: str = ""  # the first non-2xx answer or error
    tool: str = ""

    @property
    def rps(self) -> float:
        return self.requests / self.seconds if self.seconds > 0 else 0.0


# --- wrk ----------------------------------------------------------------------------------


def run_wrk(base_url: str, load: Load, shape: Shape) -> Stats:
    """One bounded wrk run with bench/scenario.lua."""
    with tempfile.TemporaryDirectory(prefix="tunnelgw-wrk-") as tmp:
        if load.write_every:
            paths = _write(Path(tmp) / "paths.txt", "\n".join(load.paths) + "\n")
            body = _write(Path(tmp) / "body.json", load.body or b"")
            script_args = ["mix", paths, load.write_path, body, str(load.write_every)]
        elif load.body is None:
            script_args = ["get", _write(Path(tmp) / "paths.txt", "\n".join(load.paths) + "\n")]
        else:
            script_args = ["post", load.paths[0], _write(Path(tmp) / "body.json", load.body)]
        threads = max(1, min(shape.threads, shape.connections))
        command = [
            *("wrk", f"--threads={threads}", f"--connections={shape.connections}"),
            *(f"--duration={max(1, round(shape.duration))}s", "--timeout=5s"),
            *(f"--script={LUA_SCRIPT}", base_url, "--", *script_args),
        ]
        done = subprocess.run(
            command,
            env={**os.environ, "BENCH_TOKEN": load.token},
            capture_output=True,
            text=True,
            timeout=shape.duration + WRK_SLACK_S,
            check=False,
        )
    if done.returncode != 0:
        raise RuntimeError(f"wrk failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    stats = _wrk_stats(_wrk_json(done.stdout))
    if stats.non_2xx and not stats.sample:
        stats.sample = _probe(base_url, load)
    return stats


def _probe(base_url: str, load: Load) -> str:
    """One request of the load, for a sample of what failed (wrk only counts failures)."""
    headers = {"Authorization": f"Bearer {load.token}", "Service-Version": "2"}
    method, path, body = load.requests()[0]
    if body is not None:
        headers["Content-Type"] = "application/json"
    try:
        answer = httpx.request(method, base_url + path, headers=headers, content=body, timeout=10)
    except httpx.HTTPError as exc:
        return f"probe failed: {exc!r}"[:SAMPLE_CHARS]
    return f"{answer.status_code} {answer.text}"[:SAMPLE_CHARS]


def _write(path: Path, content: str | bytes) -> str:
    if isinstance(content, str):
        path.write_text(content)
    else:
        path.write_bytes(content)
    return str(path)


def _wrk_json(stdout: str) -> dict[str, Any]:
    for line in stdout.splitlines():
        if line.startswith("BENCH_JSON "):
            data: dict[str, Any] = json.loads(line.removeprefix("BENCH_JSON "))
            return data
    raise RuntimeError(f"no BENCH_JSON line in wrk output:\n{stdout}")


def _wrk_stats(data: dict[str, Any]) -> Stats:
    latency = data["latency_us"]
    errors = data["socket_errors"]
    detail = ", ".join(f"{k} {v}" for k, v in errors.items() if v)
    return Stats(
        requests=data["requests"],
        seconds=data["duration_us"] / 1e6,
        p50_ms=latency["p50"] / 1000,
        p90_ms=latency["p90"] / 1000,
        p99_ms=latency["p99"] / 1000,
        mean_ms=latency["mean"] / 1000,
        max_ms=latency["max"] / 1000,
        non_2xx=data["non_2xx"],
        errors=sum(errors.values()),
        sample=data["non_2xx_sample"] or (f"socket errors: {detail}" if detail else ""),
        tool="wrk",
    )


# --- the Python generator -----------------------------------------------------------------


@dataclass
class _Tally:
    latencies: list[float] = field(default_factory=list)
    non_2xx: int = 0
    errors: int = 0
    sample: str = ""
    left: int = MAX_PYTHON_REQUESTS

    def failed(self, text: str) -> None:
        if not self.sample:
            self.sample = text[:SAMPLE_CHARS]


def _request_bytes(port: int, token: str, method: str, path: str, body: bytes | None) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", f"Host: {HOST}:{port}", "Service-Version: 2"]
    if token:
        lines.append(f"Authorization: Bearer {token}")
    if body is not None:
        lines += ["Content-Type: application/json", f"Content-Length: {len(body)}"]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + (body or b"")


async def _read_response(reader: asyncio.StreamReader) -> tuple[int, bytes]:
    """Status and body of one HTTP/1.1 response (Content-Length or chunked)."""
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ", 2)[1])
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    if "content-length" in headers:
        return status, await reader.readexactly(int(headers["content-length"]))
    if headers.get("transfer-encoding", "").lower() == "chunked":
        return status, await _read_chunked(reader)
    return status, b""


async def _read_chunked(reader: asyncio.StreamReader) -> bytes:
    body = b""
    while True:
        size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
        body += await reader.readexactly(size + 2)
        if size == 0:
            return body


async def _connection(
    port: int, requests: list[bytes], offset: int, deadline: float, tally: _Tally
) -> None:
    """One keep-alive connection sending requests in turn until the deadline; reconnects
    after an error (counted)."""
    index = offset
    while time.perf_counter() < deadline and tally.left > 0:
        try:
            reader, writer = await asyncio.wait_for(
                asyncio.open_connection(HOST, port), REQUEST_TIMEOUT_S
            )
        except (OSError, TimeoutError) as exc:
            tally.errors += 1
            tally.failed(f"connect: {exc!r}")
            await asyncio.sleep(0.05)
            continue
        try:
            while time.perf_counter() < deadline and tally.left > 0:
                tally.left -= 1
                request = requests[index % len(requests)]
                index += 1
                started = time.perf_counter()
                writer.write(request)
                status, body = await asyncio.wait_for(_read_response(reader), REQUEST_TIMEOUT_S)
                tally.latencies.append(time.perf_counter() - started)
                if not 200 <= status < 300:
                    tally.non_2xx += 1
                    tally.failed(f"{status} {body.decode(errors='replace')}")
        except (OSError, TimeoutError, asyncio.IncompleteReadError, ValueError) as exc:
            tally.errors += 1
            tally.failed(f"{type(exc).__name__}: {exc}")
        finally:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()


async def _python_load(port: int, load: Load, shape: Shape) -> tuple[_Tally, float]:
    requests = [
        _request_bytes(port, load.token, method, path, body)
        for method, path, body in load.requests()
    ]
    tally = _Tally()
    started = time.perf_counter()
    deadline = started + shape.duration
    spread = max(1, len(requests) // max(1, shape.connections))
    async with asyncio.timeout(shape.duration + REQUEST_TIMEOUT_S + 5), asyncio.TaskGroup() as tg:
        for n in range(shape.connections):
            tg.create_task(_connection(port, requests, n * spread, deadline, tally))
    return tally, time.perf_counter() - started


def percentile(sorted_values: list[float], fraction: float) -> float:
    if not sorted_values:
        return 0.0
    index = min(len(sorted_values) - 1, max(0, round(fraction * len(sorted_values)) - 1))
    return sorted_values[index]


def run_python(base_url: str, load: Load, shape: Shape) -> Stats:
    """One bounded run of the asyncio generator (in this process)."""
    port = int(base_url.rsplit(":", 1)[1])
    tally, seconds = asyncio.run(_python_load(port, load, shape))
    values = sorted(tally.latencies)
    ms = 1000.0
    return Stats(
        requests=len(values),
        seconds=seconds,
        p50_ms=percentile(values, 0.50) * ms,
        p90_ms=percentile(values, 0.90) * ms,
        p99_ms=percentile(values, 0.99) * ms,
        mean_ms=(sum(values) / len(values) * ms) if values else 0.0,
        max_ms=(values[-1] * ms) if values else 0.0,
        non_2xx=tally.non_2xx,
        errors=tally.errors,
        sample=tally.sample,
        tool="python",
    )


def run(tool: str, base_url: str, load: Load, shape: Shape) -> Stats:
    """One bounded run with `tool` ("wrk" or "python")."""
    if tool == "wrk":
        return run_wrk(base_url, load, shape)
    return run_python(base_url, load, shape)
