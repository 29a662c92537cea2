"""Stress fixtures: a fresh database per test on each engine (SQLite file, or a database in a
throwaway PostgreSQL cluster shared by the session), and sizes from the environment."""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator

import pytest

from tests import pgcluster
from tests.stress.server import Server

OPS = int(os.environ.get("TUNNELGW_STRESS_OPS", "2000"))
CLIENTS = int(os.environ.get("TUNNELGW_STRESS_CLIENTS", "64"))
CYCLES = int(os.environ.get("TUNNELGW_STRESS_CYCLES", "3"))
LOAD_SECONDS = float(os.environ.get("TUNNELGW_STRESS_LOAD_SECONDS", "3"))


@pytest.fixture(scope="session")
def pg_base() -> Iterator[str]:
    """One throwaway cluster for the session's PostgreSQL tests, each on a database of its own."""
    with pgcluster.cluster() as base:
        yield base


@pytest.fixture(params=["sqlite", "postgresql"])
def server(request: pytest.FixtureRequest, tmp_path) -> Iterator[Server]:
    url = None
    if request.param == "postgresql":
        base = request.getfixturevalue("pg_base")
        url = pgcluster.new_database(base, "stress")
    # A test module may set further settings in SERVER_ENV.
    env = getattr(request.module, "SERVER_ENV", {})
    srv = Server(tmp_path, url, "tgw_stress_" + secrets.token_hex(12), env=env)
    srv.start()
    try:
        yield srv
    finally:
        srv.stop()
        log = srv.log()
        assert "Traceback" not in log, log[-5000:]
