"""Hostile clients (issue 18, part 1): what one client does with a socket cannot stall, starve
or fool the server. Real sockets against a live `tunnelgw serve` (one worker, short limits)
on the suite's engine: SQLite, or a fresh database of the session's PostgreSQL cluster with
TUNNELGW_TEST_ENGINE=postgresql. Every wait is bounded; a check fails rather than hangs.

The schema errors and the trailing slash need no sockets: they run in-process on the same
engine.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests import pgcluster
from tests.factories import assert_error
from tests.stress.server import ROOT, Server

HEAD_SECONDS = 1.5
BODY_SECONDS = 3.0
KEEP_ALIVE_SECONDS = 2
POOL_SIZE = 4
MAX_CONNECTIONS = 40
MAX_BODY = 1024 * 1024
MAX_HEAD = 16 * 1024  # the default
SLACK = 2.0  # on top of a deadline, for a loaded machine
ENV = {
    "TUNNELGW_HEADER_TIMEOUT_SECONDS": str(HEAD_SECONDS),
    "TUNNELGW_BODY_TIMEOUT_SECONDS": str(BODY_SECONDS),
    "TUNNELGW_KEEP_ALIVE_SECONDS": str(KEEP_ALIVE_SECONDS),
    "TUNNELGW_DATABASE_POOL_SIZE": str(POOL_SIZE),
    "TUNNELGW_MAX_CONNECTIONS": str(MAX_CONNECTIONS),
    "TUNNELGW_MAX_BODY_BYTES": str(MAX_BODY),
    "TUNNELGW_LOG_LEVEL": "info",  # the access log is read by the forged-line test
}


class Live:
    """The server, its admin token and the token of a second account."""

    def __init__(self, server: Server, other_token: str) -> None:
        self.server = server
        self.other_token = other_token

    def connect(self) -> socket.socket:
        return socket.create_connection(("127.0.0.1", self.server.port), timeout=10)

    def head(self, method: str, path: str, token: str | None = None, **headers: str) -> bytes:
        lines = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1", "Service-Version: 2"]
        if token:
            lines.append(f"Authorization: Bearer {token}")
        lines += [f"{name.replace('_', '-')}: {value}" for name, value in headers.items()]
        return ("\r\n".join(lines) + "\r\n\r\n").encode()


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    data_dir: Path = tmp_path_factory.mktemp("hostile")
    url = None
    base = os.environ.get("TUNNELGW_TEST_PG_BASE")
    if base:
        url = pgcluster.new_database(base, "hostile")
    server = Server(data_dir, url, "tgw_hostile_" + secrets.token_hex(12), workers=1, env=ENV)
    server.start()
    try:
        env = {**os.environ, "TUNNELGW_DATA_DIR": str(data_dir)}
        if url:
            env["TUNNELGW_DATABASE_URL"] = url
        made = subprocess.run(
            [sys.executable, "-m", "tunnelgw", "accounts", "create", "--name", "other"],
            env=env,
            cwd=ROOT,
            capture_output=True,
            check=True,
            timeout=60,
        )
        yield Live(server, json.loads(made.stdout)["token"])
    finally:
        server.stop()
        assert "Traceback" not in server.log(), server.log()[-5000:]


def read_all(sock: socket.socket, seconds: float) -> tuple[bytes, float]:
    """Everything the server sends until it closes (or `seconds` pass); and when it closed
    (inf if it did not)."""
    started = time.monotonic()
    data = b""
    sock.settimeout(seconds)
    try:
        while chunk := sock.recv(65536):
            data += chunk
    except TimeoutError:
        return data, float("inf")
    except ConnectionResetError:
        pass
    return data, time.monotonic() - started


def read_response(sock: socket.socket, seconds: float = 10) -> bytes:
    """One response with a Content-Length, the connection left open."""
    sock.settimeout(seconds)
    data = b""
    while b"\r\n\r\n" not in data:
        data += sock.recv(65536)
    head, _, body = data.partition(b"\r\n\r\n")
    length = int(re.search(rb"content-length: (\d+)", head, re.I).group(1))
    while len(body) < length:
        body += sock.recv(65536)
    return data


def parse(data: bytes) -> tuple[int, dict[str, str], Any]:
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {k.lower(): v for k, v in (line.split(": ", 1) for line in lines[1:])}
    return int(lines[0].split()[1]), headers, json.loads(body) if body else None


def error_of(data: bytes, status: int, code: str) -> dict[str, Any]:
    """The Error body of a raw response, checked: status, code, operation id header."""
    got, headers, body = parse(data)
    assert (got, body["error_code"], body["status_code"]) == (status, code, status), data[:600]
    assert headers["content-type"] == "application/json"
    assert headers["operation-id"] == body["details"]["operation_id"]
    return body


# Validation costs time linear in the body, off the event loop.


def test_an_invalid_1mib_body_is_answered_at_once_while_healthz_is_served(live):
    """Quadratic before: 4,000 distinct items (79 KB) took 11 s and /healthz waited as long."""
    items, size = [], 40
    while size < MAX_BODY - 64:
        item = {"value": f"x{len(items)}"}
        items.append(item)
        size += len(json.dumps(item)) + 2
    bodies = [
        (
            "/reserved_domains",
            {"name": "x", "resolves_to": items},
            "ERR_FIELD_TOO_LONG",
            "resolves_to",
        ),
        # The problem last in a 1 MiB body, past a long valid string (a backend's `body` has
        # no limit of its own; `description` has 255 bytes).
        (
            "/backends/http_response",
            {"body": "x" * (MAX_BODY - 100), "status_code": "503"},
            "ERR_WRONG_TYPE",
            "status_code",
        ),
    ]
    for path, body, code, field in bodies:
        raw = json.dumps(body).encode()
        assert MAX_BODY // 2 < len(raw) <= MAX_BODY

        def post(raw: bytes = raw, path: str = path) -> httpx.Response:
            return httpx.post(
                f"{live.server.base}{path}",
                content=raw,
                headers={**live.server.headers(), "Content-Type": "application/json"},
                timeout=30,
            )

        (response, elapsed), latencies = while_polling_healthz(live.server.base, post)
        error = assert_error(response, 400, code)
        assert error["details"]["field"] == field
        assert elapsed < 1.0, elapsed
        assert len(latencies) >= 5
        assert max(latencies) < 0.5, max(latencies)


def while_polling_healthz(base: str, action: Any) -> tuple[tuple[Any, float], list[float]]:
    """(`action()`, how long it took) and the latencies of the /healthz requests sent
    meanwhile (every 5 ms, one at a time)."""
    latencies: list[float] = []
    stop = threading.Event()

    def poll() -> None:
        with httpx.Client(base_url=base, timeout=10) as client:
            while not stop.is_set():
                started = time.monotonic()
                assert client.get("/healthz").status_code == 200
                latencies.append(time.monotonic() - started)
                time.sleep(0.005)

    poller = threading.Thread(target=poll)
    poller.start()
    try:
        time.sleep(0.1)
        started = time.monotonic()
        result = action()
        elapsed = time.monotonic() - started
        time.sleep(0.1)
    finally:
        stop.set()
        poller.join(timeout=15)
    return (result, elapsed), latencies


# Time limits at the HTTP edge.


def test_a_connection_that_sends_nothing_is_closed(live):
    with live.connect() as sock:
        data, closed = read_all(sock, HEAD_SECONDS + SLACK)
    assert data == b""
    assert closed < HEAD_SECONDS + SLACK


def test_headers_sent_a_byte_at_a_time_get_408(live):
    with live.connect() as sock:
        started = time.monotonic()
        head = live.head("GET", "/healthz")
        for byte in head[:-2]:  # never the final CRLF
            if time.monotonic() - started > HEAD_SECONDS + SLACK:
                break
            try:
                sock.sendall(bytes([byte]))
            except OSError:  # the server closed: the answer is waiting
                break
            time.sleep(0.1)
        data, _ = read_all(sock, SLACK)
    assert time.monotonic() - started < HEAD_SECONDS + 2 * SLACK
    body = error_of(data, 408, "ERR_REQUEST_TIMEOUT")
    assert "headers" in body["msg"]


def test_a_stalled_body_gets_408(live):
    with live.connect() as sock:
        head = live.head(
            "POST",
            "/api_keys",
            live.server.token,
            Content_Type="application/json",
            Content_Length="118",
        )
        sock.sendall(head + b'{"descrip')
        data, closed = read_all(sock, BODY_SECONDS + SLACK)
    assert BODY_SECONDS - 0.5 < closed < BODY_SECONDS + SLACK
    body = error_of(data, 408, "ERR_REQUEST_TIMEOUT")
    assert "body" in body["msg"]
    assert parse(data)[1]["connection"] == "close"


def test_an_idle_keep_alive_connection_is_closed(live):
    with live.connect() as sock:
        sock.sendall(live.head("GET", "/healthz"))
        assert parse(read_response(sock))[0] == 200
        data, closed = read_all(sock, KEEP_ALIVE_SECONDS + SLACK)
    assert data == b""
    assert closed < KEEP_ALIVE_SECONDS + SLACK


def test_slow_uploads_do_not_starve_other_tenants(live):
    """Three times the pool size of uploads that stall after 10 bytes: every other request
    and /readyz answer at once (before, on PostgreSQL, each stalled upload held a pool
    connection from its credential check on, and the others waited for good)."""
    stalled = []
    try:
        for _ in range(3 * POOL_SIZE):
            sock = live.connect()
            head = live.head(
                "POST",
                "/api_keys",
                live.server.token,
                Content_Type="application/json",
                Content_Length="118",
            )
            sock.sendall(head + b'{"descrip')
            stalled.append(sock)
        time.sleep(0.3)  # the heads are in; the server waits for the bodies
        started = time.monotonic()
        other = {"Authorization": f"Bearer {live.other_token}", "Service-Version": "2"}
        with httpx.Client(base_url=live.server.base, timeout=BODY_SECONDS + SLACK) as client:
            for _ in range(2 * POOL_SIZE):
                took = time.monotonic()
                assert client.get("/api_keys", headers=other).status_code == 200
                assert client.post("/api_keys", headers=other, json={}).status_code == 201
                assert client.get("/readyz").status_code == 200
                assert time.monotonic() - took < 1.0
        assert time.monotonic() - started < BODY_SECONDS - 0.5  # before any upload gave up
        for sock in stalled:
            data, _ = read_all(sock, BODY_SECONDS + SLACK)
            error_of(data, 408, "ERR_REQUEST_TIMEOUT")
    finally:
        for sock in stalled:
            sock.close()


# Size limits and malformed requests: the Error body, not uvicorn's plain text.


def test_a_1mib_header_is_431(live):
    with live.connect() as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ")
        try:
            for _ in range(64):
                sock.sendall(b"a" * 16384)
            sock.sendall(b"\r\n\r\n")
        except OSError:
            pass  # closed once its answer was read: still readable below
        data, closed = read_all(sock, SLACK + 3)
    body = error_of(data, 431, "ERR_HEADERS_TOO_LARGE")
    assert body["details"]["limit"] == str(MAX_HEAD)
    assert closed < SLACK + 3
    assert httpx.get(f"{live.server.base}/healthz", timeout=5).status_code == 200


@pytest.mark.parametrize(
    ("request_bytes", "status", "code"),
    [
        (b"GET /api_keys?q=" + b"a" * 100_000 + b" HTTP/1.1\r\n\r\n", 431, "ERR_HEADERS_TOO_LARGE"),
        ("GET /api_keys?x=é HTTP/1.1\r\nHost: a\r\n\r\n".encode(), 400, "ERR_INVALID_REQUEST"),
        ("GET /é HTTP/1.1\r\nHost: a\r\n\r\n".encode(), 400, "ERR_INVALID_REQUEST"),
        (b"NOT HTTP AT ALL\r\n\r\n", 400, "ERR_INVALID_REQUEST"),
    ],
    ids=["long query", "non-ascii query", "non-ascii path", "garbage"],
)
def test_protocol_rejects_have_the_error_body(live, request_bytes, status, code):
    with live.connect() as sock:
        sock.sendall(request_bytes)
        data, _ = read_all(sock, SLACK + 3)
    error_of(data, status, code)


def test_past_the_connection_limit_the_answer_is_503(live):
    idle = [live.connect() for _ in range(MAX_CONNECTIONS)]
    try:
        time.sleep(0.2)  # accepted
        with live.connect() as sock:
            sock.sendall(live.head("GET", "/healthz"))
            data, _ = read_all(sock, SLACK)
        error_of(data, 503, "ERR_SERVICE_UNAVAILABLE")
        assert parse(data)[1]["retry-after"] == "1"
    finally:
        for sock in idle:
            sock.close()
    deadline = time.monotonic() + SLACK
    while httpx.get(f"{live.server.base}/healthz", timeout=5).status_code != 200:
        assert time.monotonic() < deadline
        time.sleep(0.1)


# Logs cannot be forged.


def test_a_newline_in_the_path_does_not_forge_a_log_line(live):
    forged = "2026-11-26 06:50:00,000 INFO tunnelgw.access DELETE /api_keys/ak_x 204"
    path = "/healthz%0a" + forged.replace(" ", "%20") + "%0d%1b[2J"
    with live.connect() as sock:
        sock.sendall(live.head("GET", path))
        assert parse(read_response(sock))[0] == 404
    deadline = time.monotonic() + SLACK
    while "\\n2026-11-26 06:50:00,000" not in live.server.log():
        assert time.monotonic() < deadline, live.server.log()[-2000:]
        time.sleep(0.1)
    log = live.server.log()
    assert not any(line.startswith(forged[:23]) for line in log.splitlines())
    assert "\x1b" not in log
    line = next(line for line in log.splitlines() if "\\n2026-11-26" in line)
    assert line.endswith(" 404 " + line.split(" 404 ", 1)[1])  # still one line, status kept
    assert "\\r\\x1b[2J" in line


# In-process, same engine: one code per kind of schema failure, and no redirect from Host.

HTTP_RESPONSE = "/backends/http_response"


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        (HTTP_RESPONSE, {"status_code": "503"}, "status_code"),  # anyOf: integer or null
        (HTTP_RESPONSE, {"status_code": 200.5}, "status_code"),
        (HTTP_RESPONSE, {"status_code": True}, "status_code"),
        (HTTP_RESPONSE, {"description": 5}, "description"),  # nullable string
        (HTTP_RESPONSE, {"headers": "x"}, "headers"),  # nullable map
        (HTTP_RESPONSE, {"headers": {"X-A": 1}}, "headers.X-A"),
        ("/reserved_domains", {"name": 5}, "name"),  # anyOf of two string forms
        ("/reserved_domains", {"domain": ["a.example.com"]}, "domain"),
        ("/reserved_domains", {"region": 5}, "region"),  # nullable enum
        ("/reserved_domains", {"resolves_to": "us"}, "resolves_to"),  # nullable array
        ("/reserved_domains", {"resolves_to": [{"value": 1}]}, "resolves_to.0.value"),
        (
            "/reserved_domains",
            {"certificate_management_policy": "x"},
            "certificate_management_policy",
        ),
        ("/api_keys", {"description": {"a": 1}}, "description"),
    ],
)
def test_a_wrong_json_type_is_wrong_type_wherever_it_is(admin, path, body, field):
    error = assert_error(admin.post(path, json=body), 400, "ERR_WRONG_TYPE")
    assert error["details"]["field"] == field


def test_a_wrong_type_inside_an_update_is_wrong_type(admin):
    created = admin.post(HTTP_RESPONSE, json={}).json()
    path = f"{HTTP_RESPONSE}/{created['id']}"
    error = assert_error(admin.patch(path, json={"status_code": "200"}), 400, "ERR_WRONG_TYPE")
    assert error["details"]["field"] == "status_code"


def test_a_value_no_form_accepts_names_the_forms(admin):
    error = assert_error(
        admin.post(HTTP_RESPONSE, json={"status_code": 42}), 400, "ERR_INVALID_FIELD"
    )
    assert error["details"]["field"] == "status_code"
    assert "minimum of 100" in error["msg"]


@pytest.mark.parametrize("path", ["/api_keys/", "/healthz/", "/openapi.json/", "/ui/nothing/"])
def test_a_trailing_slash_is_404_never_a_redirect_from_host(factory, path):
    anonymous = factory.client(None)
    response = anonymous.get(path, headers={"Host": "evil.example"})
    assert_error(response, 404, "ERR_ROUTE_NOT_FOUND")
    assert "location" not in response.headers


def test_the_body_is_received_before_the_credentials_are_checked(factory):
    """Order of checks: a body that streams past the limit is 413 before the credentials are
    looked up (the request holds no database connection while its body arrives); the
    version header still comes first."""
    from tests.conftest import MAX_BODY_BYTES

    def oversize() -> Iterator[bytes]:
        yield b'{"description": "'
        for _ in range(MAX_BODY_BYTES // 1024 + 1):
            yield b"x" * 1024
        yield b'"}'

    anonymous = factory.client(None)
    response = anonymous.post("/api_keys", content=oversize())
    assert_error(response, 413, "ERR_BODY_TOO_LARGE")
    response = anonymous.post("/api_keys", content=oversize(), version=None)
    assert_error(response, 400, "ERR_VERSION_HEADER_MISSING")
    assert_error(anonymous.post("/api_keys", json={}), 401, "ERR_AUTHENTICATION_REQUIRED")


@pytest.mark.inprocess
def test_the_app_answers_a_stalled_body_408_before_the_credential_check(tmp_path):
    """The body deadline of tunnelgw.http.middleware, in-process (no database is touched: the
    body is due before the credentials are looked up)."""
    import asyncio

    from tunnelgw.core.settings import Settings
    from tunnelgw.http.app import create_app

    app = create_app(Settings(data_dir=tmp_path, body_timeout_seconds=0.2))

    async def stalled_body() -> Any:
        yield b'{"descrip'
        await asyncio.sleep(10)

    async def call() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
            return await client.post(
                "/api_keys",
                content=stalled_body(),
                headers={"Service-Version": "2", "Content-Type": "application/json"},
            )

    started = time.monotonic()
    response = asyncio.run(call())
    assert time.monotonic() - started < 5
    error = assert_error(response, 408, "ERR_REQUEST_TIMEOUT")
    assert error["msg"] == "The request body did not arrive within 0.2 seconds."
    assert response.headers["connection"] == "close"
