"""Creates through the ASGI app in this process, no HTTP server and no load generator: the
installed tunnelgw's app on a fresh SQLite data dir, `--subscriptions` event subscriptions on
the account (each to the created event of the bench's resource, with a destination of its
own), `--warmup` creates, then `--creates`, `--concurrency` at a time on uvloop. Prints the CPU
time per create.

bench/instructions.py runs it under valgrind and counts the instructions of the creates, a
figure the machine's other tenants do not move; alone, its CPU time is as noisy as the
machine.

    python bench/inprocess.py --subscriptions 10 --creates 8000
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import data
import orjson
import uvloop

from tunnelgw.core.settings import Settings
from tunnelgw.http.app import create_app
from tunnelgw.migrations import migrate

Asgi = Callable[..., Awaitable[None]]


class Caller:
    """Requests to an ASGI app with one API key's headers. Not httpx's ASGITransport: the
    client's own work would count in the figures, on both sides alike, and blur the ratio."""

    def __init__(self, app: Asgi, token: str) -> None:
        self.app = app
        self.headers = [
            *((k.lower().encode(), v.encode()) for k, v in data.api_headers(token).items()),
            (b"content-type", b"application/json"),
            (b"host", b"127.0.0.1"),
        ]

    async def post(self, path: str, body: bytes) -> tuple[int, bytes]:
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": "POST",
            "scheme": "http",
            "path": path,
            "raw_path": path.encode(),
            "query_string": b"",
            "root_path": "",
            "headers": self.headers,
            "server": ("127.0.0.1", 8080),
            "client": ("127.0.0.1", 50000),
        }
        sent = False
        status = 0
        chunks: list[bytes] = []

        async def receive() -> dict[str, Any]:
            nonlocal sent
            if sent:  # the request is whole: wait as a client that keeps the connection
                await asyncio.Event().wait()
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}

        async def send(message: dict[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            else:
                chunks.append(message.get("body", b""))

        await self.app(scope, receive, send)
        return status, b"".join(chunks)

    async def made(self, path: str, body: dict[str, Any]) -> str:
        status, answer = await self.post(path, orjson.dumps(body))
        if status != 201:
            raise RuntimeError(f"POST {path}: {status} {answer[:300]!r}")
        return str(orjson.loads(answer)["id"])


async def subscribe(caller: Caller, count: int) -> None:
    """As bench/ab.py does through HTTP."""
    for n in range(count):
        destination = await caller.made("/event_destinations", data.destination_body(n))
        await caller.made("/event_subscriptions", data.subscription_body(destination))


async def creates(caller: Caller, count: int, concurrency: int) -> None:
    gate = asyncio.Semaphore(concurrency)

    async def one() -> None:
        async with gate:
            status, answer = await caller.post(data.API_PATH, data.CREATE_BYTES)
            if status != 201:
                raise RuntimeError(f"create: {status} {answer[:300]!r}")

    await asyncio.gather(*(one() for _ in range(count)))


async def serve_and_measure(app: Asgi, token: str, args: argparse.Namespace) -> float:
    """CPU seconds of the creates (the app started and stopped through its lifespan)."""
    events: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    started = asyncio.Event()

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "lifespan.startup.complete":
            started.set()
        elif message["type"] == "lifespan.startup.failed":
            raise RuntimeError(message.get("message"))

    await events.put({"type": "lifespan.startup"})
    lifespan = asyncio.create_task(app({"type": "lifespan", "state": {}}, events.get, send))
    await started.wait()
    caller = Caller(app, token)
    await subscribe(caller, args.subscriptions)
    await creates(caller, args.warmup, args.concurrency)
    before = time.process_time()
    await creates(caller, args.creates, args.concurrency)
    spent = time.process_time() - before
    await events.put({"type": "lifespan.shutdown"})
    await lifespan
    return spent


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--subscriptions", type=int, default=0)
    parser.add_argument("--warmup", type=int, default=300, help="creates before (300)")
    parser.add_argument("--creates", type=int, default=4000, help="creates measured (4000)")
    parser.add_argument("--concurrency", type=int, default=32, help="at a time (32)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tunnelgw-inprocess-") as tmp:
        settings = Settings(data_dir=Path(tmp), quota_default=1_000_000_000, log_level="warning")
        url = settings.resolved_database_url()
        migrate.upgrade(url)
        token = data.create_accounts(url, 1)[0].token
        app = create_app(settings)
        spent = uvloop.run(serve_and_measure(app, token, args))
    per_create = spent / args.creates * 1e6
    print(f"{args.creates} creates, {args.subscriptions} subscriptions: {per_create:.1f} us each")


if __name__ == "__main__":
    main()
