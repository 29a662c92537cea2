"""Reserved domains raced on 2 workers, SQLite and PostgreSQL: concurrent reservations of one
domain give exactly one 201; a certificate management job that falls due while many readers
arrive at once is settled exactly once (every reader sees the same issued certificate)."""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter

import httpx
import pytest

from tests.stress.conftest import CYCLES
from tests.stress.server import Server

pytestmark = pytest.mark.stress
SERVER_ENV = {"TUNNELGW_CERTIFICATE_ISSUE_DELAY_SECONDS": "1"}
DOMAINS = max(CYCLES * 2, 4)
READERS = 8
RESERVERS = 8


def _client(server: Server) -> httpx.AsyncClient:
    return server.client()


def test_one_domain_reserved_by_many_at_once(server: Server) -> None:
    outcomes: Counter[str] = Counter()

    async def run() -> None:
        async with _client(server) as http:
            for _ in range(DOMAINS):
                body = {"domain": f"race-{uuid.uuid4().hex[:10]}.example.com"}
                responses = await asyncio.gather(
                    *(http.post("/reserved_domains", json=body) for _ in range(RESERVERS))
                )
                codes = [r.status_code for r in responses]
                outcomes.update(r.json().get("error_code", str(r.status_code)) for r in responses)
                assert codes.count(201) == 1, [r.text for r in responses]
                assert all(c in (201, 409) for c in codes), [r.text for r in responses]

    asyncio.run(run())
    print(f"\n{DOMAINS} domains x {RESERVERS} concurrent reservations: {dict(outcomes)}")


def test_a_due_certificate_job_is_settled_once(server: Server) -> None:
    async def run() -> None:
        async with _client(server) as http:
            policy = {"certificate_management_policy": {"private_key_type": "ecdsa"}}
            created = [
                (
                    await http.post(
                        "/reserved_domains",
                        json={"domain": f"tls-{uuid.uuid4().hex[:10]}.example.com", **policy},
                    )
                ).json()
                for _ in range(DOMAINS)
            ]
            assert all(d["certificate_management_status"]["provisioning_job"] for d in created)
            await asyncio.sleep(2.2)  # every job is now due (1 s delay on whole-second timestamps)
            reads = [
                http.get(f"/reserved_domains/{d['id']}") for d in created for _ in range(READERS)
            ]
            lists = [http.get("/reserved_domains", params={"limit": 100}) for _ in range(READERS)]
            responses = await asyncio.gather(*reads, *lists)
            assert all(r.status_code == 200 for r in responses), [r.text for r in responses]
            seen: dict[str, set[str]] = {d["id"]: set() for d in created}
            for r in responses:
                body = r.json()
                for domain in body.get("reserved_domains", [body]):
                    if domain["id"] in seen:
                        assert domain["certificate"] is not None, domain
                        assert domain["certificate_management_status"]["provisioning_job"] is None
                        seen[domain["id"]].add(domain["certificate"]["id"])
            # One settlement per domain: every reader saw the same certificate.
            assert all(len(certs) == 1 for certs in seen.values()), seen
            for d in created:
                final = (await http.get(f"/reserved_domains/{d['id']}")).json()
                assert {final["certificate"]["id"]} == seen[d["id"]]

    asyncio.run(run())
    print(f"\n{DOMAINS} due jobs x {READERS} concurrent readers + {READERS} lists: settled once")
