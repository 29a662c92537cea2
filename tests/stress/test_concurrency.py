"""Many clients against 2 workers: mixed creates, updates, deletes and reads, on SQLite and
PostgreSQL. No 5xx; every acknowledged create is readable afterwards as last acknowledged;
no duplicate ids; paging sees no duplicates during the load and exactly the live set after.
Sizes: TUNNELGW_STRESS_OPS, TUNNELGW_STRESS_CLIENTS."""

from __future__ import annotations

import asyncio
import random
import time
from collections import Counter
from typing import Any

import httpx
import pytest

from tests.stress.conftest import CLIENTS, OPS
from tests.stress.server import Server

pytestmark = pytest.mark.stress
PATH = "/backends/http_response"


class Load:
    def __init__(self, server: Server) -> None:
        self.server = server
        self.live: dict[str, dict[str, Any]] = {}  # id -> last acknowledged state
        self.deleted: set[str] = set()
        self.deleting: set[str] = set()  # DELETE sent (maybe not yet answered)
        self.unexpected_404: list[str] = []
        self.statuses: Counter[int] = Counter()
        self.created: list[str] = []
        self.remaining = OPS
        self.paging_duplicates = 0

    def _take(self) -> bool:
        if self.remaining <= 0:
            return False
        self.remaining -= 1
        return True

    async def client(self, http: httpx.AsyncClient, n: int) -> None:
        mine: list[str] = []  # each client updates and deletes only its own rows
        rng = random.Random(n)
        while self._take():
            roll = rng.random()
            if roll < 0.45 or not mine:
                body = {"body": f"c{n}-{len(mine)}", "status_code": rng.choice([200, 503])}
                r = await http.post(PATH, json=body)
                self.statuses[r.status_code] += 1
                if r.status_code == 201:
                    row = r.json()
                    self.live[row["id"]] = row
                    self.created.append(row["id"])
                    mine.append(row["id"])
            elif roll < 0.65:
                target = rng.choice(mine)
                r = await http.patch(f"{PATH}/{target}", json={"body": f"u{n}-{rng.random()}"})
                self.statuses[r.status_code] += 1
                if r.status_code == 200:
                    self.live[target] = r.json()
            elif roll < 0.75:
                target = mine.pop(rng.randrange(len(mine)))
                self.deleting.add(target)
                r = await http.delete(f"{PATH}/{target}")
                self.statuses[r.status_code] += 1
                if r.status_code == 204:
                    self.live.pop(target, None)
                    self.deleted.add(target)
            elif roll < 0.95 and self.created:
                target = rng.choice(self.created)
                r = await http.get(f"{PATH}/{target}")
                self.statuses[r.status_code] += 1
                if r.status_code == 404 and target not in self.deleting:
                    self.unexpected_404.append(target)
            else:
                self.paging_duplicates += await self.walk_pages(http)

    async def walk_pages(self, http: httpx.AsyncClient) -> int:
        """Page through the whole list; the number of ids seen twice."""
        seen: list[str] = []
        url: str | None = f"{PATH}?limit=100"
        while url:
            r = await http.get(url.removeprefix(self.server.base))
            self.statuses[r.status_code] += 1
            if r.status_code != 200:
                return 0
            page = r.json()
            seen += [b["id"] for b in page["backends"]]
            url = page["next_page_uri"]
        return len(seen) - len(set(seen))


def test_mixed_load_with_two_workers(server: Server) -> None:
    load = Load(server)

    async def run() -> None:
        limits = httpx.Limits(max_connections=CLIENTS, max_keepalive_connections=CLIENTS)
        async with server.client(limits=limits) as http:
            await asyncio.gather(*(load.client(http, n) for n in range(CLIENTS)))

    started = time.monotonic()
    asyncio.run(run())
    elapsed = time.monotonic() - started
    print(
        f"\n{OPS} ops, {CLIENTS} clients, 2 workers: {elapsed:.1f}s "
        f"({OPS / elapsed:.0f} ops/s); statuses {dict(load.statuses)}"
    )

    assert not [s for s in load.statuses if s >= 500], load.statuses
    assert set(load.statuses) <= {200, 201, 204, 404}, load.statuses
    assert load.unexpected_404 == []  # 404 only for rows whose DELETE was already sent
    assert len(load.created) == len(set(load.created))
    assert load.paging_duplicates == 0

    with httpx.Client(base_url=server.base, headers=server.headers(), timeout=60) as http:
        for row_id, expected in load.live.items():
            assert http.get(f"{PATH}/{row_id}").json() == expected
        for row_id in load.deleted:
            assert http.get(f"{PATH}/{row_id}").status_code == 404
        listed: list[str] = []
        url: str | None = f"{PATH}?limit=100"
        while url:
            page = http.get(url.removeprefix(server.base)).json()
            listed += [b["id"] for b in page["backends"]]
            url = page["next_page_uri"]
    assert len(listed) == len(set(listed))
    assert set(listed) == set(load.live)
    assert listed == sorted(listed, reverse=True)
