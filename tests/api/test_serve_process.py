"""`tunnelgw serve` as a process: it starts itself again as `python -OO`, in the same process
(the id its starter holds), and its spawned workers inherit the flag; `TUNNELGW_OPTIMIZE=false`
keeps the interpreter as started."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.pgcluster import children
from tunnelgw.testing import TunnelgwServer

pytestmark = [
    pytest.mark.one_engine,  # the kit's server is SQLite whatever the engine under test
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc"),
]


def _command_line(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")[:-1]


def test_serve_runs_under_python_oo_unless_turned_off(monkeypatch):
    # As tox runs it: bytecode may be cached (no PYTHONDONTWRITEBYTECODE), so `-OO` is used.
    monkeypatch.delenv("PYTHONDONTWRITEBYTECODE", raising=False)
    with TunnelgwServer(workers=2) as server:
        main = _command_line(server.pid)
        assert main[:2] == [sys.executable, "-OO"], main
        assert main[-4:] == ["--host", "127.0.0.1", "--port", str(server.port)]
        workers = [
            line
            for line in map(_command_line, children(server.pid))
            if "--multiprocessing-fork" in line
        ]
        assert len(workers) == 2, workers
        assert [line[1] for line in workers] == ["-OO", "-OO"], workers
        with server.client() as client:
            assert client.get("/tunnels").status_code == 200
    with TunnelgwServer(optimize=False) as server:
        assert "-OO" not in _command_line(server.pid)
        with server.client() as client:
            assert client.get("/tunnels").status_code == 200
