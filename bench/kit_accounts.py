"""What each way of isolating tests costs per test (docs/testing-your-code.md): the pytest
plugin's `tunnelgw` fixture (reset the one account, load the fixture again) against its
`account` fixture (a new account with the fixture, dropped after the test), on one
`TunnelgwServer`. Each round is what the fixture does around one test that made a few
resources; the median and 90th percentile of the rounds are printed, in milliseconds.

    python bench/kit_accounts.py                      # SQLite in a temporary directory
    python bench/kit_accounts.py --rounds 200
    python bench/kit_accounts.py --database-url postgresql://user@host/db
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

from tunnelgw.testing import TunnelgwServer

FIXTURE = {
    "version": 1,
    "tunnels": [{"ref": "t", "forwards_to": "http://localhost:3000"}],
    "api": {"http_response_backends": [{"ref": "b", "body": "hello", "status_code": 200}]},
}
MADE_PER_TEST = 3  # resources a test creates, so that the reset and the drop delete some


def _test_body(client: Any) -> None:
    for n in range(MADE_PER_TEST):
        answer = client.post("/backends/http_response", json={"body": f"r{n}"})
        assert answer.status_code == 201, answer.text


def _measure(rounds: int, one: Callable[[], float]) -> tuple[float, float]:
    costs = sorted(one() for _ in range(rounds))
    return statistics.median(costs), costs[int(len(costs) * 0.9) - 1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--database-url")
    args = parser.parse_args()
    with TunnelgwServer(database_url=args.database_url) as server:
        client = server.client()

        def reset(fixture: Any) -> Callable[[], float]:
            def one() -> float:
                _test_body(client)
                started = time.perf_counter()
                server.reset()
                if fixture is not None:
                    server.load(fixture)
                return (time.perf_counter() - started) * 1000

            return one

        def account(fixture: Any) -> Callable[[], float]:
            def one() -> float:
                started = time.perf_counter()
                made = server.create_account("bench", fixture)
                spent = time.perf_counter() - started
                with made.client() as own:
                    _test_body(own)
                started = time.perf_counter()
                made.drop()
                return (spent + time.perf_counter() - started) * 1000

            return one

        print(f"{args.rounds} rounds, {args.database_url or 'SQLite'}; ms per test (median, p90)")
        for name, way in (("reset", reset), ("account", account)):
            for label, fixture in (("no fixture", None), ("fixture", FIXTURE)):
                way(fixture)()  # warm-up
                median, p90 = _measure(args.rounds, way(fixture))
                print(f"  {name:8} {label:11} {median:7.1f} {p90:7.1f}")
        client.close()


if __name__ == "__main__":
    main()
