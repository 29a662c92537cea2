"""The test helpers (tunnelgw.testing), used the way a user uses them: `TunnelgwServer` in this
process, and the pytest plugin in a child pytest run on test files written to a temporary
folder, with only the installed package importable (no PYTHONPATH, cwd the temp folder).

The installed package. When the `tunnelgw` that a plain interpreter imports is this tree
(tox installs the wheel built from it; an editable install of this checkout), the child runs
on it as is. Otherwise (e.g. a shared venv with an editable install of another checkout) the
child runs in an overlay venv: this tree's tunnelgw (handlers and models inside) as the one
installed distribution, with the entry points pyproject.toml declares, on top of this venv's
dependencies, so the plugin is still found only through its `pytest11` entry point.

Tests marked `needs_admin_api` use `/_admin/` (reset, fixtures, clock, faults); they are
skipped while openapi.yaml has no such paths.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import textwrap
import tomllib
import uuid
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import httpx
import pytest
import yaml

from tunnelgw.core.spec import load as load_spec
from tunnelgw.seeding import FixtureError
from tunnelgw.testing import TunnelgwError, TunnelgwServer, TunnelgwStartError

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("tunnelgw",)  # its handlers and models are symlinks inside it
CHILD_TIMEOUT = 300

ADMIN_API = any(path.startswith("/_admin/") for path in load_spec()["paths"])
needs_admin_api = pytest.mark.skipif(
    not ADMIN_API, reason="the admin API (/_admin/) is not in this tree's openapi.yaml yet"
)

WORLD = """\
version: 1
tunnels:
  - ref: kit-tunnel
    metadata: '{"kit": true}'
    forwards_to: http://localhost:3000
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


# The server in this process.


@pytest.fixture(scope="module")
def kit_server(tmp_path_factory):
    """One server for the module's checks. The environment's own TUNNELGW_* variables are set
    to values that would break it, to show that they are not passed on."""
    world = tmp_path_factory.mktemp("kit") / "world.yaml"
    world.write_text(WORLD)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TUNNELGW_DATABASE_URL", "sqlite:////nonexistent/dir/x.db")
        patch.setenv("TUNNELGW_SHARED_DOMAIN", "wrong.test")
        server = TunnelgwServer(
            fixture=world,
            shared_domain="kit.test",
            certificate_issue_delay_seconds=0,
            version_header_aliases=["X-Kit-A", "X-Kit-B"],
        ).start()
    with server:
        yield server


def test_credentials_and_urls(kit_server):
    assert kit_server.base_url == f"http://127.0.0.1:{kit_server.port}"
    assert kit_server.token.startswith("tgw_")
    assert kit_server.account_id.startswith("acct_")
    assert kit_server.headers == {
        "Authorization": f"Bearer {kit_server.token}",
        "Service-Version": "2",
    }
    keys = httpx.get(f"{kit_server.base_url}/api_keys", headers=kit_server.headers).json()
    assert [key["description"] for key in keys["keys"]] == ["admin key"]
    assert kit_server.running
    assert (
        repr(kit_server)
        == f"<TunnelgwServer {kit_server.base_url} {kit_server.account_id} running>"
    )


def test_settings_reach_the_server(kit_server):
    with kit_server.client() as client:
        created = client.post("/reserved_domains", json={"name": f"kit{uuid.uuid4().hex[:8]}"})
        assert created.status_code == 201, created.text
        assert created.json()["domain"].endswith(".kit.test")
        # certificate_issue_delay_seconds=0: the job is done at the first read.
        managed = client.post(
            "/reserved_domains",
            json={
                "domain": f"{uuid.uuid4().hex[:8]}.example.com",
                "certificate_management_policy": {"authority": "letsencrypt"},
            },
        ).json()
        got = client.get(f"/reserved_domains/{managed['id']}").json()
        assert got["certificate"]["id"].startswith("cert_")
    # A list setting is passed comma-separated.
    headers = {"Authorization": f"Bearer {kit_server.token}", "X-Kit-B": "2"}
    assert httpx.get(f"{kit_server.base_url}/api_keys", headers=headers).status_code == 200


def test_fixture_loaded_at_start(kit_server):
    with kit_server.client() as client:
        tunnels = client.get("/tunnels").json()["tunnels"]
    assert [json.loads(t["metadata"]) for t in tunnels] == [{"kit": True}]


def test_a_websocket_upgrade_is_answered_as_plain_http(kit_server):
    """The API has no WebSocket endpoint and the server loads no WebSocket library (uvicorn's
    `ws="none"`): an upgrade request gets an ordinary HTTP answer, never a 101 handshake."""
    with socket.create_connection(("127.0.0.1", kit_server.port), timeout=10) as conn:
        conn.sendall(
            b"GET /api_keys HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\n"
            b"Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\n"
            b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
        )
        status_line = conn.recv(4096).split(b"\r\n", 1)[0]
    assert status_line.startswith(b"HTTP/1.1 4"), status_line
    maps = Path(f"/proc/{kit_server._proc.pid}/maps")  # the one worker serves in this process
    if maps.exists():
        assert "websockets" not in maps.read_text()
    assert httpx.get(f"{kit_server.base_url}/healthz").status_code == 200


def test_client_headers_add_to_the_servers(kit_server):
    with kit_server.client(headers={"Service-Version": "1"}) as client:
        answer = client.get("/api_keys")
    assert answer.json()["error_code"] == "ERR_VERSION_UNSUPPORTED"


def test_error_answers_raise_tunnelgw_error(kit_server):
    with pytest.raises(TunnelgwError) as caught:
        kit_server._admin("GET", "/no/such/route")
    error = caught.value
    assert (error.status, error.error_code) == (404, "ERR_ROUTE_NOT_FOUND")
    assert error.details["operation_id"].startswith("op_")
    assert str(error).startswith("GET /no/such/route: 404 ERR_ROUTE_NOT_FOUND: ")


def test_error_message_shows_details_but_the_operation_id():
    body = {
        "error_code": "ERR_INVALID_FIXTURE",
        "msg": "bad",
        "details": {"operation_id": "op_1", "issues": ["f:1:2: $.x: no"]},
    }
    assert "op_1" not in str(TunnelgwError("POST", "/_admin/fixtures", 400, body))
    assert "f:1:2: $.x: no" in str(TunnelgwError("POST", "/_admin/fixtures", 400, body))
    assert str(TunnelgwError("GET", "/x", 502, "Bad Gateway")) == "GET /x: 502: Bad Gateway"


def test_log_text(kit_server):
    assert "Uvicorn running on http://127.0.0.1:" in kit_server.log_text()
    position = kit_server.log_position()
    assert position > 0
    assert kit_server.log_text(since=position) == ""


@needs_admin_api
def test_admin_methods(kit_server, tmp_path):
    with kit_server.client() as client:
        assert client.post("/reserved_domains", json={"name": "kitreset"}).status_code == 201
        summary = kit_server.reset()
        assert summary["account_id"] == kit_server.account_id
        assert client.get("/reserved_domains").json()["reserved_domains"] == []
        assert client.get("/tunnels").json()["tunnels"] == []

        world = tmp_path / "world.yaml"
        world.write_text(WORLD)
        for fixture in (world, str(world), WORLD, yaml.safe_load(WORLD)):
            kit_server.reset()
            loaded = kit_server.load(fixture)
            assert loaded["account_id"] == kit_server.account_id
            assert len(client.get("/tunnels").json()["tunnels"]) == 1

    real = datetime.now(UTC).replace(microsecond=0)  # the clock answers whole seconds
    assert kit_server.now() - real < timedelta(seconds=30)
    assert kit_server.advance(3600) - real >= timedelta(seconds=3600)
    future = datetime(2100, 1, 1, tzinfo=UTC)
    assert future <= kit_server.set_time(datetime(2100, 1, 1)) < future + timedelta(seconds=30)
    assert future <= kit_server.now() < future + timedelta(seconds=30)
    assert kit_server.reset_clock() - real < timedelta(seconds=30)

    rule = kit_server.fault("api_keys.list", status=503, count=1)
    assert kit_server.faults() == [rule]
    kit_server.clear_faults()
    assert kit_server.faults() == []
    kit_server.reset()


def test_a_simulated_agent_connects_and_goes_away(kit_server):
    kit_server.reset()  # no fixture tunnels
    with kit_server.client() as client:
        credential = client.post(
            "/credentials", json={"acl": ["bind:*.kit.test", "bind:env=*"]}
        ).json()
        started = kit_server.connect_agent(
            credential["token"],
            "https://agent.kit.test",
            {"labels": {"env": "ci"}},
            os="linux",
        )
        ts = started["tunnel_session"]["id"]
        assert client.get(f"/tunnel_sessions/{ts}").json() == started["tunnel_session"]
        assert [e["public_url"] for e in started["endpoints"]] == ["https://agent.kit.test"]
        assert len(client.get("/tunnels").json()["tunnels"]) == 2
        with pytest.raises(TunnelgwError) as refused:
            kit_server.connect_agent(credential["token"], "https://kit.example.org")
        assert refused.value.error_code == "ERR_AGENT_BIND_DENIED"
        kit_server.disconnect_agent(ts)
        assert client.get(f"/tunnel_sessions/{ts}").status_code == 404
        assert client.get("/tunnels").json()["tunnels"] == []


def _mocked(answer):
    """A TunnelgwServer whose admin calls go to `answer(request) -> httpx.Response` (the
    interface of the admin API, checked here without a server), and the requests seen."""
    server = TunnelgwServer()
    server._port, server._token, server._account_id = 1, "tgw_x", "acct_x"
    seen: list[tuple[str, str, object]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content) if request.content else None
        seen.append((request.method, request.url.path, body))
        assert request.headers["Authorization"] == "Bearer tgw_x"
        assert request.headers["Service-Version"] == "2"
        return answer(request)

    server._http = server.client(transport=httpx.MockTransport(handler))
    return server, seen


def test_admin_calls_follow_the_interface(tmp_path):
    rule = {"id": "flt_1", "operation": "reserved_domains.create", "status": 503, "remaining": 2}
    clock = {"now": "2030-01-01T00:00:00Z", "offset_seconds": 60}

    def answer(request: httpx.Request) -> httpx.Response:
        match request.method, request.url.path:
            case "POST", "/_admin/reset":
                return httpx.Response(200, json={"account_id": "acct_x", "deleted": {}})
            case "POST", "/_admin/fixtures":
                return httpx.Response(200, json={"account_id": "acct_x", "labels": {}})
            case (_, "/_admin/clock"):
                return httpx.Response(200, json=clock)
            case "POST", "/_admin/faults":
                return httpx.Response(201, json=rule)
            case "GET", "/_admin/faults":
                return httpx.Response(200, json={"faults": [rule]})
            case "DELETE", "/_admin/faults":
                return httpx.Response(204)
        return httpx.Response(404, json={"error_code": "ERR_ROUTE_NOT_FOUND", "msg": "No."})

    server, seen = _mocked(answer)
    world = tmp_path / "world.yaml"
    world.write_text(WORLD + "    started_at: 2026-01-02T03:04:05Z\n")
    document = {
        "version": 1,
        "tunnels": [
            {
                "ref": "kit-tunnel",
                "metadata": '{"kit": true}',
                "forwards_to": "http://localhost:3000",
                "started_at": "2026-01-02T03:04:05Z",  # a YAML timestamp stays a string
            }
        ],
    }
    assert server.reset() == {"account_id": "acct_x", "deleted": {}}
    for fixture in (world, str(world), world.read_text()):
        assert server.load(fixture)["account_id"] == "acct_x"
        assert seen[-1] == ("POST", "/_admin/fixtures", document)
    server.load({"version": 1, "when": datetime(2030, 1, 1)})  # sent as given, times RFC 3339
    assert seen[-1][2] == {"version": 1, "when": "2030-01-01T00:00:00Z"}
    moved = datetime(2030, 1, 1, tzinfo=UTC)
    assert server.advance(60) == moved
    assert server.set_time(datetime(2030, 1, 1)) == moved
    assert server.set_time("2030-01-01T00:00:00Z") == moved
    assert server.reset_clock() == moved
    assert server.now() == moved
    assert server.fault("reserved_domains.create", status=503, count=2) == rule
    server.fault("api_keys.list", latency_ms=250, probability=0.5)
    assert server.faults() == [rule]
    server.clear_faults()
    assert seen[1:] == [
        *[("POST", "/_admin/fixtures", document)] * 3,
        ("POST", "/_admin/fixtures", {"version": 1, "when": "2030-01-01T00:00:00Z"}),
        ("POST", "/_admin/clock", {"advance_seconds": 60}),
        ("POST", "/_admin/clock", {"set": "2030-01-01T00:00:00Z"}),
        ("POST", "/_admin/clock", {"set": "2030-01-01T00:00:00Z"}),
        ("POST", "/_admin/clock", {"reset": True}),
        ("GET", "/_admin/clock", None),
        ("POST", "/_admin/faults", {"operation": "reserved_domains.create", "status": 503,
                                    "count": 2}),
        ("POST", "/_admin/faults", {"operation": "api_keys.list", "latency_ms": 250,
                                    "probability": 0.5}),
        ("GET", "/_admin/faults", None),
        ("DELETE", "/_admin/faults", None),
    ]  # fmt: skip
    assert seen[0] == ("POST", "/_admin/reset", None)
    server.stop()  # closes the client


def test_admin_errors_raise_tunnelgw_error(tmp_path):
    invalid = {
        "error_code": "ERR_INVALID_FIXTURE",
        "status_code": 400,
        "msg": "The fixture cannot be loaded.",
        "details": {"operation_id": "op_1", "issues": ["<body>:1:1: $.x: unknown"]},
    }

    def answer(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/_admin/fixtures":
            return httpx.Response(400, json=invalid)
        if request.url.path == "/_admin/clock":
            return httpx.Response(200, json=["not", "an", "object"])
        return httpx.Response(502, text="Bad Gateway")

    server, _ = _mocked(answer)
    with pytest.raises(TunnelgwError) as caught:
        server.load({"version": 1, "x": 1})
    assert (caught.value.status, caught.value.error_code) == (400, "ERR_INVALID_FIXTURE")
    assert caught.value.details["issues"] == ["<body>:1:1: $.x: unknown"]
    assert caught.value.body == invalid
    with pytest.raises(TunnelgwError, match=r"POST /_admin/reset: 502: Bad Gateway"):
        server.reset()
    with pytest.raises(TunnelgwError, match=r"GET /_admin/clock: 200: \['not'"):
        server.now()
    # A file is checked here first: its problems name its lines.
    bad = tmp_path / "bad.yaml"
    bad.write_text("version: 1\ntunnels:\n  - refx: x\n")
    with pytest.raises(FixtureError, match=f"{bad}:3:"):
        server.load(bad)
    with pytest.raises(FixtureError, match="<fixture text>:3:"):
        server.load(bad.read_text())
    server.stop()


def test_a_bad_fixture_fails_before_the_server_starts(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("version: 1\ntunnels:\n  - refx: x\n")
    server = TunnelgwServer(fixture=bad)
    with pytest.raises(FixtureError) as caught:
        server.start()
    assert f"{bad}:3:" in str(caught.value)
    assert server._data_dir is None  # no directory, no process
    with pytest.raises(FileNotFoundError):
        TunnelgwServer(fixture=tmp_path / "missing.yaml").start()


def test_settings_are_checked_by_name():
    with pytest.raises(TypeError, match=r"'shared_domian'.*did you mean 'shared_domain'"):
        TunnelgwServer(shared_domian="x.test")
    with pytest.raises(TypeError, match="not a tunnelgw setting"):
        TunnelgwServer(no_such_thing=1)
    for managed in ("host", "data_dir", "bootstrap_token", "seed", "admin_api"):
        with pytest.raises(TypeError, match=r"sets .* itself"):
            TunnelgwServer(**{managed: "x"})


def test_values_and_leftovers(tmp_path):
    from pydantic import SecretStr

    from tunnelgw.testing import inputs, process

    assert [inputs.env_value(v) for v in (True, False, SecretStr("k"), ("a", "b"), 1.5)] == [
        "true",
        "false",
        "k",
        "a,b",
        "1.5",
    ]
    assert json.dumps([date(2030, 1, 2), tmp_path], default=inputs.json_default) == json.dumps(
        ["2030-01-02", str(tmp_path)]
    )
    with pytest.raises(TypeError, match="not JSON serializable"):
        json.dumps({1j}, default=inputs.json_default)
    assert process.read_log(tmp_path / "missing") == ""
    assert process.log_tail(tmp_path / "missing") == (b"", 0)
    assert process.exited(1)  # not our child
    # A forked copy of the test process leaves the server and its directory alone.
    assert process.shutdown(-1, None, None, tmp_path, 1.0) is None
    assert tmp_path.exists()


def test_async_client(kit_server):
    async def main() -> int:
        async with kit_server.async_client() as client:
            return (await client.get("/api_keys")).status_code

    assert asyncio.run(main()) == 200


def test_not_started():
    server = TunnelgwServer()
    assert repr(server) == "<TunnelgwServer (not started)>"
    assert not server.running
    with pytest.raises(RuntimeError, match="not started"):
        _ = server.token
    server.stop()  # nothing to stop


def test_a_failed_start_raises_with_the_log_tail():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = TunnelgwServer(port=port, tcp_port_min=30000, tcp_port_max=20000)
    with pytest.raises(TunnelgwStartError) as caught:
        server.start()
    message = str(caught.value)
    assert "tunnelgw serve exited with status" in message
    assert "tunnelgw server log (tail)" in message
    assert "tcp_port_min must not be greater than tcp_port_max" in message
    assert "tcp_port_min must not be greater" in server.log_text()  # kept after the stop
    assert server.log_position() == len(server.log_text().encode())
    assert not server.data_dir.exists()
    assert not _alive(server.pid)
    assert not server.running
    with pytest.raises(RuntimeError, match="started already"):
        server.start()


def test_a_database_that_cannot_be_opened():
    server = TunnelgwServer(database_url="sqlite:////nonexistent/dir/x.db")
    with pytest.raises(TunnelgwStartError, match="`tunnelgw accounts create` failed"):
        server.start()
    assert not server.data_dir.exists()


def test_a_start_that_times_out_is_stopped():
    server = TunnelgwServer(startup_timeout=0.01)
    with pytest.raises(TunnelgwStartError, match=r"not ready within 0\.01 s"):
        server.start()
    assert not server.data_dir.exists()
    assert not _alive(server.pid)


def test_a_port_taken_before_the_bind_is_retried(monkeypatch):
    from tunnelgw.testing import process

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        ports = iter([busy.getsockname()[1]])
        free = process.free_port
        monkeypatch.setattr(process, "free_port", lambda: next(ports, None) or free())
        with TunnelgwServer() as server:
            assert server.port != busy.getsockname()[1]
            assert "address already in use" in server.log_text()
            assert server.log_text().count("$ tunnelgw serve --port") == 2
            assert server.account_id.startswith("acct_")  # from the first attempt's banner


def test_a_given_database_gets_a_fresh_account(tmp_path):
    """Another account of the database (made by the CLI first) is never seen; the temporary
    directory is removed even when the block raises."""
    url = os.environ.get("TUNNELGW_TEST_DATABASE_URL") or f"sqlite:///{tmp_path / 'shared.db'}"
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("TUNNELGW_")},
        "PYTHONPATH": str(ROOT),
        "TUNNELGW_DATABASE_URL": url,
        "TUNNELGW_DATA_DIR": str(tmp_path),
    }
    created = subprocess.run(
        [sys.executable, "-m", "tunnelgw", "accounts", "create", "--name", "other"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        check=True,
        timeout=120,
    )
    other = json.loads(created.stdout)
    other_headers = {"Authorization": f"Bearer {other['token']}", "Service-Version": "2"}
    domain = f"{uuid.uuid4().hex[:12]}.example.com"

    class DoneError(Exception):
        pass

    world = yaml.safe_load(WORLD)
    with (  # noqa: PT012
        pytest.raises(DoneError),
        TunnelgwServer(database_url=url, fixture=world) as server,
    ):
        assert server.database_url == url
        assert server.account_id != other["account_id"]
        with server.client() as client:
            assert len(client.get("/tunnels").json()["tunnels"]) == 1  # into our account
            theirs = client.post(
                "/reserved_domains", json={"domain": domain}, headers=other_headers
            )
            assert theirs.status_code == 201, theirs.text
            assert client.get("/reserved_domains").json()["reserved_domains"] == []
        pid, data_dir = server.pid, server.data_dir
        assert "$ tunnelgw accounts create" in server.log_text()
        raise DoneError
    assert not data_dir.exists()
    assert not _alive(pid)


def test_importing_the_plugin_is_cheap():
    """pytest imports the plugin in every run of an environment with tunnelgw installed
    (this project's own test runs too): it loads neither httpx nor pydantic nor the server."""
    code = textwrap.dedent(
        """
        import sys
        import tunnelgw.testing.pytest_plugin
        heavy = ("httpx", "pydantic", "sqlalchemy", "connexion", "yaml", "tunnelgw.core",
                 "tunnelgw.testing.server", "tunnelgw.seeding")
        print(",".join(m for m in heavy if m in sys.modules))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == ""


# The plugin, in a child pytest.


@dataclass
class Kit:
    python: str
    env: dict[str, str]

    def run(self, *argv: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [self.python, *argv],
            cwd=cwd,
            env={**self.env, **env},
            capture_output=True,
            text=True,
            timeout=CHILD_TIMEOUT,
            check=False,
        )

    def pytest(self, folder: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
        return self.run(
            "-m", "pytest", str(folder), "-p", "no:cacheprovider", *args, cwd=folder, **env
        )


def _child_env() -> dict[str, str]:
    return {
        name: value
        for name, value in os.environ.items()
        if name != "PYTHONPATH" and not name.startswith(("TUNNELGW_", "PYTEST_", "COV_CORE_"))
    }


def _declared_entry_points() -> dict[str, dict[str, str]]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    groups: dict[str, dict[str, str]] = project.get("entry-points", {})
    return groups


PROBE = """\
import importlib.metadata, json, tunnelgw
group = importlib.metadata.entry_points(group="pytest11")
points = [e.value for e in group if e.name == "tunnelgw"]
print(json.dumps({"file": tunnelgw.__file__, "points": points}))
"""


def _is_this_tree(installed: dict) -> bool:
    """Whether the plainly importable tunnelgw is this tree's (its testing package the same
    bytes) with the entry point this tree declares."""
    package = Path(installed["file"]).parent
    mine = ROOT / "tunnelgw" / "testing"
    same = all(
        (package / "testing" / path.name).is_file()
        and (package / "testing" / path.name).read_bytes() == path.read_bytes()
        for path in mine.glob("*.py")
    )
    return same and installed["points"] == [_declared_entry_points()["pytest11"]["tunnelgw"]]


@pytest.fixture(scope="module")
def kit(tmp_path_factory) -> Kit:
    env = _child_env()
    where = tmp_path_factory.mktemp("probe")
    probe = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=where,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    if probe.returncode == 0 and _is_this_tree(json.loads(probe.stdout)):
        return Kit(sys.executable, env)
    return _overlay(tmp_path_factory.mktemp("overlay"), env)


def _overlay(base: Path, env: dict[str, str]) -> Kit:
    venv = base / "venv"
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120
    )
    python = str(venv / "bin" / "python")
    site = Path(
        subprocess.run(
            [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        ).stdout.strip()
    )
    tree = base / "tree"
    tree.mkdir()
    for name in PACKAGES:
        (tree / name).symlink_to(ROOT / name, target_is_directory=True)
    # What this process imports from, but this checkout: the dependencies.
    dependencies = dict.fromkeys(
        path for path in sys.path if path and Path(path).is_dir() and Path(path).resolve() != ROOT
    )
    # .pth files run in name order: the tree first, then the dependencies (whose own .pth
    # files, e.g. an editable install of another checkout, are not run).
    (site / "a_tunnelgw_tree.pth").write_text(f"{tree}\n")
    (site / "b_dependencies.pth").write_text("".join(f"{path}\n" for path in dependencies))
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    dist = site / f"tunnelgw-{project['version']}.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: tunnelgw\nVersion: {project['version']}\n"
    )
    (dist / "entry_points.txt").write_text(
        "".join(
            f"[{group}]\n" + "".join(f"{name} = {value}\n" for name, value in points.items())
            for group, points in _declared_entry_points().items()
        )
    )
    return Kit(python, env)


PLUGIN_TESTS = """\
import asyncio
import json
import os
from pathlib import Path


def test_the_session_server(tunnelgw_server, tunnelgw_settings):
    assert tunnelgw_settings == {
        "certificate_issue_delay_seconds": "40",
        "shared_domain": "kit.test",
    }
    with tunnelgw_server.client() as client:
        created = client.post("/reserved_domains", json={"name": "hello"})
        assert created.status_code == 201, created.text
        assert created.json()["domain"] == "hello.kit.test"
        tunnels = client.get("/tunnels").json()["tunnels"]
        assert [json.loads(t["metadata"]) for t in tunnels] == [{"kit": True}]


def test_fails_on_purpose(tunnelgw_server):
    Path(os.environ["KIT_OUT"]).write_text(json.dumps(
        {"pid": tunnelgw_server.pid, "data_dir": str(tunnelgw_server.data_dir)}
    ))
    assert False, "fails on purpose"
"""


def test_plugin_session_server_options_and_cleanup_after_a_failure(kit, tmp_path):
    folder = tmp_path / "suite"
    folder.mkdir()
    (folder / "pytest.ini").write_text(
        textwrap.dedent(
            """\
            [pytest]
            filterwarnings = error
            tunnelgw_fixture = fixtures/world.yaml
            tunnelgw_settings =
                certificate_issue_delay_seconds = 40
            """
        )
    )
    (folder / "fixtures").mkdir()
    (folder / "fixtures" / "world.yaml").write_text(WORLD)
    (folder / "test_plugin.py").write_text(PLUGIN_TESTS)
    out = tmp_path / "out.json"
    done = kit.pytest(folder, "--tunnelgw-setting", "shared_domain=kit.test", KIT_OUT=str(out))
    report = done.stdout + done.stderr
    assert done.returncode == 1, report
    assert "1 failed, 1 passed" in report, report
    assert "fails on purpose" in report
    assert "tunnelgw server log" in report
    left = json.loads(out.read_text())
    assert not _alive(left["pid"])
    assert not Path(left["data_dir"]).exists()


def test_plugin_options_in_help(kit, tmp_path):
    done = kit.run("-m", "pytest", "--help", "-p", "no:cacheprovider", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    for option in ("--tunnelgw-database-url", "--tunnelgw-fixture", "--tunnelgw-setting"):
        assert option in done.stdout


AT_EXIT = """\
import json
from tunnelgw.testing import TunnelgwServer

server = TunnelgwServer().start()
print(json.dumps({"pid": server.pid, "data_dir": str(server.data_dir)}), flush=True)
# No stop(): the server goes at interpreter exit.
"""


def test_a_server_left_running_stops_at_exit(kit, tmp_path):
    done = kit.run("-c", AT_EXIT, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    left = json.loads(done.stdout)
    assert not _alive(left["pid"])
    assert not Path(left["data_dir"]).exists()


ADMIN_TESTS = """\
import pytest


def test_create(tunnelgw):
    with tunnelgw.client() as client:
        created = client.post("/reserved_domains", json={"domain": "kit-one.example.com"})
        assert created.status_code == 201, created.text
        assert len(client.get("/reserved_domains").json()["reserved_domains"]) == 1
        assert len(client.get("/tunnels").json()["tunnels"]) == 1  # the fixture


def test_reset_between_tests(tunnelgw):
    with tunnelgw.client() as client:
        assert client.get("/reserved_domains").json()["reserved_domains"] == []
        assert len(client.get("/tunnels").json()["tunnels"]) == 1  # loaded again


def test_advance_the_clock_to_get_a_certificate(tunnelgw):
    with tunnelgw.client() as client:
        created = client.post(
            "/reserved_domains",
            json={
                "domain": "kit-cert.example.com",
                "certificate_management_policy": {"authority": "letsencrypt"},
            },
        ).json()
        path = f"/reserved_domains/{created['id']}"
        # The job completes 40 s (tunnelgw_settings) after it started.
        assert client.get(path).json()["certificate"] is None
        tunnelgw.advance(60)
        got = client.get(path).json()
        assert got["certificate"]["id"].startswith("cert_")
        assert got["certificate_management_status"]["provisioning_job"] is None


def test_a_fault_twice_then_gone(tunnelgw):
    rule = tunnelgw.fault("reserved_domains.create", status=503, count=2)
    assert rule["operation"] == "reserved_domains.create"
    assert [r["id"] for r in tunnelgw.faults()] == [rule["id"]]
    with tunnelgw.client() as client:
        for n in range(2):
            failed = client.post("/reserved_domains", json={"domain": f"kit-f{n}.example.com"})
            assert failed.status_code == 503
            assert failed.json()["details"]["injected"] == "true"
        third = client.post("/reserved_domains", json={"domain": "kit-f2.example.com"})
        assert third.status_code == 201, third.text


def test_reset_clears_faults_and_the_clock(tunnelgw):
    assert tunnelgw.faults() == []
    with tunnelgw.client() as client:
        created = client.post(
            "/reserved_domains",
            json={
                "domain": "kit-clock.example.com",
                "certificate_management_policy": {"authority": "letsencrypt"},
            },
        ).json()
        assert client.get(f"/reserved_domains/{created['id']}").json()["certificate"] is None
"""


@needs_admin_api
def test_plugin_reset_clock_and_faults(kit, tmp_path):
    folder = tmp_path / "suite"
    folder.mkdir()
    (folder / "pytest.ini").write_text(
        "[pytest]\nfilterwarnings = error\ntunnelgw_settings = certificate_issue_delay_seconds=40\n"
    )
    (folder / "world.yaml").write_text(WORLD)
    (folder / "test_admin.py").write_text(ADMIN_TESTS)
    done = kit.pytest(folder, "--tunnelgw-fixture", str(folder / "world.yaml"))
    report = done.stdout + done.stderr
    assert done.returncode == 0, report
    assert "5 passed" in report, report


def _documented_example() -> str:
    """The complete test file of docs/testing-your-code.md."""
    section = (ROOT / "docs" / "testing-your-code.md").read_text()
    section = section[section.index("A complete test file") :]
    start = section.index("```python\n") + len("```python\n")
    return section[start : section.index("```\n", start)]


def test_the_documented_example_is_a_test_file():
    example = _documented_example()
    compile(example, "test_reservations.py", "exec")
    assert "def test_" in example


@needs_admin_api
def test_the_documented_example_passes(kit, tmp_path):
    folder = tmp_path / "suite"
    folder.mkdir()
    (folder / "pytest.ini").write_text("[pytest]\nfilterwarnings = error\n")
    (folder / "test_reservations.py").write_text(_documented_example())
    done = kit.pytest(folder)
    report = done.stdout + done.stderr
    assert done.returncode == 0, report
    assert "4 passed" in report, report


# --- events (issue 23) ----------------------------------------------------------------------


def test_event_calls_follow_the_interface():
    item = {"id": "evd_1", "outcome": "delivered", "event": {"event_type": "api_key_created.v0"}}
    rule = {"id": "flt_1", "operation": "event_destinations.deliver", "status": 503}

    def answer(request: httpx.Request) -> httpx.Response:
        match request.method, request.url.path:
            case "GET", "/_admin/events":
                return httpx.Response(200, json={"events": [item]})
            case "GET", "/_admin/events/count":
                return httpx.Response(200, json={"count": 1})
            case "POST", "/_admin/faults":
                return httpx.Response(201, json=rule)
        return httpx.Response(404, json={"error_code": "ERR_ROUTE_NOT_FOUND", "msg": "No."})

    seen: list[str] = []

    def recorded(request: httpx.Request) -> httpx.Response:
        seen.append(request.url.raw_path.decode())
        return answer(request)

    server, bodies = _mocked(recorded)
    assert server.events() == [item]
    assert server.events(type="api_key_created.v0", destination_id="ed_1", limit=5) == [item]
    since = datetime(2030, 1, 1)
    assert server.events(subscription_id="esb_1", since=since) == [item]
    assert server.count_events(type="api_key_created.v0", since="2030-01-01T00:00:00Z") == 1
    assert server.fail_deliveries() == rule
    server.fail_deliveries(500, destination_id="ed_1", count=2, probability=0.5)
    assert seen == [
        "/_admin/events",
        "/_admin/events?type=api_key_created.v0&destination_id=ed_1&limit=5",
        "/_admin/events?subscription_id=esb_1&since=2030-01-01T00%3A00%3A00Z",
        "/_admin/events/count?type=api_key_created.v0&since=2030-01-01T00%3A00%3A00Z",
        "/_admin/faults",
        "/_admin/faults",
    ]
    assert [body for _, _, body in bodies[-2:]] == [
        {"operation": "event_destinations.deliver", "status": 503},
        {
            "operation": "event_destinations.deliver",
            "status": 500,
            "destination_id": "ed_1",
            "count": 2,
            "probability": 0.5,
        },
    ]
    server.stop()


EVENT_TESTS = """\
import pytest


def _subscribe(client, *types):
    destination = client.post(
        "/event_destinations", json={"target": {"datadog": {"api_key": "dd-kit"}}}
    ).json()["id"]
    client.post(
        "/event_subscriptions",
        json={"sources": [{"type": t} for t in types], "destination_ids": [destination]},
    )
    return destination


def test_a_created_key_fires_its_event(tunnelgw):
    with tunnelgw.client() as client:
        destination = _subscribe(client, "api_key_created.v0")
        key = client.post("/api_keys", json={"description": "ci"}).json()
    [sent] = tunnelgw.events(type="api_key_created.v0", destination_id=destination)
    assert sent["outcome"] == "delivered"
    assert sent["event"]["event_id"].startswith("ev_")
    assert sent["event"]["object"] == {**key, "token": None}
    assert tunnelgw.count_events() == 1


def test_a_refused_change_fires_nothing(tunnelgw):
    assert tunnelgw.events() == []  # reset between tests
    with tunnelgw.client() as client:
        _subscribe(client, "ip_restriction_created.v0")
        policy = client.post("/ip_policies", json={}).json()["id"]
        client.delete(f"/ip_policies/{policy}")
        refused = client.post(
            "/ip_restrictions", json={"type": "dashboard", "ip_policy_ids": [policy]}
        )
        assert refused.status_code == 404
    assert tunnelgw.events() == []


def test_a_failing_destination(tunnelgw):
    with tunnelgw.client() as client:
        destination = _subscribe(client, "api_key_created.v0")
        tunnelgw.fail_deliveries(503, destination_id=destination, count=1)
        assert client.post("/api_keys", json={}).status_code == 201
        assert client.post("/api_keys", json={}).status_code == 201
    first, second = tunnelgw.events()
    assert (first["outcome"], first["error"]["status_code"]) == ("failed", 503)
    assert second["outcome"] == "delivered"
"""


@needs_admin_api
def test_plugin_events(kit, tmp_path):
    folder = tmp_path / "suite"
    folder.mkdir()
    (folder / "pytest.ini").write_text("[pytest]\nfilterwarnings = error\n")
    (folder / "test_events.py").write_text(EVENT_TESTS)
    done = kit.pytest(folder)
    report = done.stdout + done.stderr
    assert done.returncode == 0, report
    assert "3 passed" in report, report
