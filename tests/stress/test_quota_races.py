"""Quotas raced on 2 workers, SQLite and PostgreSQL: many concurrent creates of one account
against a small quota give exactly the quota's number of 201s, the rest 409
ERR_QUOTA_EXCEEDED, and the account then holds exactly that many rows."""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest

from tests.stress.conftest import CYCLES
from tests.stress.server import Server

pytestmark = pytest.mark.stress
QUOTA = 5
SERVER_ENV = {"TUNNELGW_QUOTAS": f"http_response_backend={QUOTA}"}
CREATORS = 24
PATH = "/backends/http_response"


def test_concurrent_creates_stop_at_the_quota(server: Server) -> None:
    outcomes: Counter[str] = Counter()

    async def run() -> None:
        async with server.client() as http:
            for _ in range(max(CYCLES, 2)):
                responses = await asyncio.gather(
                    *(http.post(PATH, json={"body": str(n)}) for n in range(CREATORS))
                )
                codes = Counter(r.json().get("error_code", str(r.status_code)) for r in responses)
                outcomes.update(codes)
                assert codes == {"201": QUOTA, "ERR_QUOTA_EXCEEDED": CREATORS - QUOTA}, codes
                held = (await http.get(PATH)).json()["backends"]
                assert len(held) == QUOTA
                for row in held:  # room for the next cycle
                    assert (await http.delete(f"{PATH}/{row['id']}")).status_code == 204

    asyncio.run(run())
    print(f"\n{CREATORS} concurrent creates against a quota of {QUOTA}: {dict(outcomes)}")
