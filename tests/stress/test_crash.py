"""Crash durability: kill -9 the server (parent and workers) in the middle of a write load,
restart it on the same database, and find every create that got a 201 there and intact;
several cycles, on SQLite and PostgreSQL. Sizes: TUNNELGW_STRESS_CYCLES,
TUNNELGW_STRESS_LOAD_SECONDS, TUNNELGW_STRESS_CLIENTS."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx
import pytest

from tests.stress.conftest import CLIENTS, CYCLES, LOAD_SECONDS
from tests.stress.server import Server

pytestmark = pytest.mark.stress
PATH = "/backends/http_response"


async def _write_until_killed(server: Server, acked: dict[str, dict[str, Any]], cycle: int) -> int:
    """Create rows from many clients; kill the server after LOAD_SECONDS. Failed requests."""
    failures = 0

    async def client(http: httpx.AsyncClient, n: int) -> None:
        nonlocal failures
        i = 0
        while True:
            body = {"body": f"cycle{cycle}-client{n}-{i}", "headers": {"X-N": str(i)}}
            i += 1
            try:
                r = await http.post(PATH, json=body)
            except httpx.TransportError:
                failures += 1
                return  # the server is gone
            assert r.status_code == 201, r.text
            acked[r.json()["id"]] = r.json()

    async def killer() -> None:
        await asyncio.sleep(LOAD_SECONDS)
        await asyncio.to_thread(server.kill)

    async with httpx.AsyncClient(
        base_url=server.base,
        headers=server.headers(),
        timeout=30,
        limits=httpx.Limits(max_connections=CLIENTS),
    ) as http:
        await asyncio.gather(killer(), *(client(http, n) for n in range(CLIENTS)))
    return failures


def test_every_acknowledged_create_survives_kill_9(server: Server) -> None:
    acked: dict[str, dict[str, Any]] = {}
    for cycle in range(CYCLES):
        before = len(acked)
        started = time.monotonic()
        asyncio.run(_write_until_killed(server, acked, cycle))
        print(
            f"\ncycle {cycle}: {len(acked) - before} creates acknowledged in "
            f"{time.monotonic() - started:.1f}s before kill -9"
        )
        assert len(acked) > before, "the load made no progress"
        server.start()  # same data dir and database
        with httpx.Client(base_url=server.base, headers=server.headers(), timeout=60) as http:
            for row_id, row in acked.items():
                got = http.get(f"{PATH}/{row_id}")
                assert got.status_code == 200, (row_id, got.text)
                assert got.json() == row
    print(f"{len(acked)} acknowledged creates over {CYCLES} kill -9 cycles, all intact")
