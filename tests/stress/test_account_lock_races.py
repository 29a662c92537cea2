"""Changes that lock one account's row, raced on 2 workers, SQLite and PostgreSQL: event
subscriptions moved to another destination (their routes stored on the account), IP
restrictions and fault rules made (the account's summaries), its clock moved, and creates
that take the quotas' turn and fire events, all at once. Every request succeeds (none is
aborted as a deadlock's victim), and the account ends as the requests left it: every
subscription at its new destination, each create's event delivered once per subscription."""

from __future__ import annotations

import asyncio
from collections import Counter

import httpx
import pytest

from tests.stress.conftest import CYCLES
from tests.stress.server import Server

pytestmark = pytest.mark.stress
SERVER_ENV = {"TUNNELGW_ADMIN_API": "1"}
SUBSCRIPTIONS = 8
CREATES = 8
BACKENDS = "/backends/http_response"
CREATED = "http_response_backend_created.v0"


async def _made(http: httpx.AsyncClient, path: str, body: dict[str, object]) -> str:
    answer = await http.post(path, json=body)
    assert answer.status_code == 201, answer.text
    return str(answer.json()["id"])


def test_changes_that_lock_the_account_all_succeed_at_once(server: Server) -> None:
    async def run() -> Counter[int]:
        statuses: Counter[int] = Counter()
        async with server.client() as http:
            target = {"target": {"datadog": {"api_key": "k"}}}
            destinations = [await _made(http, "/event_destinations", target) for _ in range(2)]
            sources = {"sources": [{"type": CREATED}], "destination_ids": [destinations[0]]}
            subscriptions = [
                await _made(http, "/event_subscriptions", sources) for _ in range(SUBSCRIPTIONS)
            ]
            policy = await _made(http, "/ip_policies", {})
            # At most 10 cycles: their deliveries (64 each) stay within one list of events.
            for cycle in range(min(max(CYCLES, 2), 10)):
                moved_to = destinations[(cycle + 1) % 2]
                answers = await asyncio.gather(
                    *(
                        http.patch(
                            f"/event_subscriptions/{id_}", json={"destination_ids": [moved_to]}
                        )
                        for id_ in subscriptions
                    ),
                    *(
                        http.post(
                            "/ip_restrictions",
                            json={"type": "dashboard", "ip_policy_ids": [policy]},
                        )
                        for _ in range(4)
                    ),
                    *(
                        http.post(
                            "/_admin/faults", json={"operation": "api_keys.list", "status": 503}
                        )
                        for _ in range(3)
                    ),
                    http.post("/_admin/clock", json={"advance_seconds": 60}),
                    *(http.post(BACKENDS, json={"body": str(n)}) for n in range(CREATES)),
                )
                statuses.update(answer.status_code for answer in answers)
                assert all(answer.status_code < 300 for answer in answers), [
                    answer.text for answer in answers if answer.status_code >= 300
                ]
                listed = (await http.get("/event_subscriptions")).json()["event_subscriptions"]
                assert {s["destinations"][0]["id"] for s in listed} == {moved_to}
                made = [answer.json()["id"] for answer in answers[-CREATES:]]
                fired = Counter(
                    item["event"]["object"]["id"]
                    for item in (
                        await http.get("/_admin/events", params={"type": CREATED, "limit": 1000})
                    ).json()["events"]
                )
                assert {id_: fired[id_] for id_ in made} == dict.fromkeys(made, SUBSCRIPTIONS)
        return statuses

    statuses = asyncio.run(run())
    print(f"\nrequests that lock one account, raced: {dict(statuses)}")
