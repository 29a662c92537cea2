"""Quotas raced on 2 workers, SQLite and PostgreSQL: many concurrent creates of one account
against a small quota give exactly the quota's number of 201s, the rest 409
ERR_QUOTA_EXCEEDED, and the account then holds exactly that many rows; and against a quota
past what a SQLite writer raises the bound by at once (`quotas.LEASE`), exactly the quota's
number too, with the workers' creates interleaved."""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest

from tests.stress.conftest import CYCLES
from tests.stress.server import Server
from tunnelgw.services import quotas

pytestmark = pytest.mark.stress
QUOTA = 5
# Past three raises of the bound by LEASE (tunnelgw.services.quotas), so some creates take
# slots raised ahead, and others find the bound near the quota.
LARGE = 3 * quotas.LEASE + 5
SERVER_ENV = {"TUNNELGW_QUOTAS": f"http_response_backend={QUOTA},tunnel_group_backend={LARGE}"}
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


def test_concurrent_creates_stop_at_a_quota_past_the_bound_raised_ahead(server: Server) -> None:
    batches = LARGE // CREATORS + 2

    async def run() -> Counter[str]:
        codes: Counter[str] = Counter()
        async with server.client() as http:
            for _ in range(batches):
                responses = await asyncio.gather(
                    *(http.post("/backends/tunnel_group", json={}) for _ in range(CREATORS))
                )
                codes.update(r.json().get("error_code", str(r.status_code)) for r in responses)
        return codes

    codes = asyncio.run(run())
    assert codes == {"201": LARGE, "ERR_QUOTA_EXCEEDED": batches * CREATORS - LARGE}, codes
