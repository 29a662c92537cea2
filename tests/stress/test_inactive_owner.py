"""A bot user's API key on 2 workers, SQLite and PostgreSQL: made inactive, it is refused on
the very next request whichever worker answers (each request on a connection of its own, so
the workers share them); active again, it works everywhere; deleted, it is gone everywhere."""

from __future__ import annotations

import asyncio
from collections import Counter

import httpx
import pytest

from tests.stress.server import Server

pytestmark = pytest.mark.stress
REQUESTS = 40  # per state, each on a new connection


def _outcomes(server: Server, token: str) -> Counter[str]:
    async def one() -> str:
        headers = {**server.headers(), "Authorization": f"Bearer {token}", "Connection": "close"}
        async with httpx.AsyncClient(base_url=server.base, headers=headers, timeout=30) as http:
            response = await http.get("/credentials")
        return response.json().get("error_code", str(response.status_code))

    async def run() -> list[str]:
        return list(await asyncio.gather(*(one() for _ in range(REQUESTS))))

    return Counter(asyncio.run(run()))


def test_an_inactive_bot_users_key_is_refused_by_every_worker(server: Server) -> None:
    with httpx.Client(base_url=server.base, headers=server.headers(), timeout=30) as admin:
        bot = admin.post("/service_users", json={"name": "stress"}).json()["id"]
        token = admin.post("/api_keys", json={"owner_id": bot}).json()["token"]
        assert _outcomes(server, token) == {"200": REQUESTS}
        assert admin.patch(f"/service_users/{bot}", json={"active": False}).status_code == 200
        assert _outcomes(server, token) == {"ERR_PRINCIPAL_INACTIVE": REQUESTS}
        assert admin.patch(f"/bot_users/{bot}", json={"active": True}).status_code == 200
        assert _outcomes(server, token) == {"200": REQUESTS}
        assert admin.delete(f"/service_users/{bot}").status_code == 204
        assert _outcomes(server, token) == {"ERR_INVALID_CREDENTIALS": REQUESTS}
