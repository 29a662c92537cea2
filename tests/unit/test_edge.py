"""The HTTP/1.1 protocol of `tunnelgw serve` (tunnelgw.http.edge), driven in-process on a
real event loop with an in-memory transport: head and body deadlines, the head size limit,
and the Error bodies of what it refuses. tests/api/test_hostile_clients.py does the same
over real sockets against a live server."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from uvicorn.config import Config
from uvicorn.server import ServerState

from tunnelgw.http import edge
from tunnelgw.http.edge import EdgeProtocol, Limits

LIMITS = Limits(header_timeout=0.2, body_timeout=0.2, max_header_bytes=1024)
WAIT = 0.5  # past either deadline


@pytest.fixture(autouse=True)
def _short_linger(monkeypatch):
    monkeypatch.setattr(edge, "LINGER_SECONDS", 0.3)


class Transport(asyncio.Transport):
    """What the protocol writes, and whether it closed the connection."""

    def __init__(self) -> None:
        super().__init__()
        self.written = b""
        self.writes: list[bytes] = []  # each write as made
        self.closed = False
        self.eof = False  # half-closed: the answer is complete, the client may still send

    @property
    def done(self) -> bool:
        """Nothing more will be written."""
        return self.closed or self.eof

    def write_eof(self) -> None:
        self.eof = True

    def can_write_eof(self) -> bool:
        return True

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"peername": ("127.0.0.1", 5000), "sockname": ("127.0.0.1", 8080)}.get(name, default)

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.written += bytes(data)
        self.writes.append(bytes(data))

    def close(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def response(self) -> tuple[int, dict[str, str], Any]:
        head, _, body = self.written.partition(b"\r\n\r\n")
        lines = head.decode().split("\r\n")
        pairs = (line.split(": ", 1) for line in lines[1:])
        headers = {name.lower(): value for name, value in pairs}
        return int(lines[0].split()[1]), headers, json.loads(body) if body else None


async def echo_app(scope: Any, receive: Any, send: Any) -> None:
    """Reads the whole body (if any), answers 200 with its length."""
    size = 0
    if scope["method"] == "POST":
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            size += len(message.get("body", b""))
            if not message.get("more_body"):
                break
    body = str(size).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [(b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})


def run(
    scenario: Callable[[EdgeProtocol, Transport], Awaitable[None]],
    *,
    app: Any = echo_app,
    limit_concurrency: int | None = None,
    state: ServerState | None = None,
) -> None:
    async def main() -> None:
        config = Config(app=app, limit_concurrency=limit_concurrency, log_config=None, ws="none")
        config.load()
        protocol = EdgeProtocol(
            config=config,
            server_state=state or ServerState(),
            app_state={},
            _loop=asyncio.get_running_loop(),
            limits=LIMITS,
        )
        transport = Transport()
        protocol.connection_made(transport)
        try:
            await scenario(protocol, transport)
        finally:
            protocol.connection_lost(None)

    asyncio.run(main())


def test_a_silent_connection_is_closed_without_an_answer():
    async def scenario(protocol: EdgeProtocol, transport: Transport) -> None:
        await asyncio.sleep(WAIT)
        assert transport.closed
        assert transport.written == b""

    run(scenario)


def test_a_stalled_head_is_408():
    async def scenario(protocol: EdgeProtocol, transport: Transport) -> None:
        protocol.data_received(b"GET /healthz HTTP/1.1\r\nHost: a\r\n")
        assert not transport.done
        await asyncio.sleep(WAIT)
        assert transport.eof
        status, headers, body = transport.response()
        assert (status, body["error_code"]) == (408, "ERR_REQUEST_TIMEOUT")
        assert headers["connection"] == "close"
        assert headers["operation-id"] == body["details"]["operation_id"]

    run(scenario)


def test_the_head_deadline_counts_from_the_first_byte_of_each_request():
    async def scenario(protocol: EdgeProtocol, transport: Transport) -> None:
        protocol.data_received(b"GET /a HTTP/1.1\r\nHost: a\r\n\r\n")
        await asyncio.sleep(0.05)
        assert transport.written.startswith(b"HTTP/1.1 200")
        transport.written = b""
        await asyncio.sleep(WAIT)  # idle keep-alive (uvicorn's 5 s by default): still open
        assert not transport.closed
        protocol.data_received(b"GET /b HTTP/1.1\r\n")
        await asyncio.sleep(WAIT)
        assert transport.response()[0] == 408

    run(scenario)


def test_a_stalled_body_closes_the_connection_after_the_answer():
    """The app itself answers 408 (tunnelgw.http.middleware); here it keeps waiting, so the
    protocol only makes sure the connection does not outlive the response."""

    async def slow_app(scope: Any, receive: Any, send: Any) -> None:
        await asyncio.sleep(WAIT)
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    async def scenario(protocol: EdgeProtocol, transport: Transport) -> None:
        protocol.data_received(b"POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\n12")
        await asyncio.sleep(WAIT * 2)
        assert transport.written.startswith(b"HTTP/1.1 204")
        assert b"connection: close" in transport.written
        assert transport.closed

    run(scenario, app=slow_app)


def test_a_body_nobody_waits_for_is_cut_at_its_deadline():
    async def scenario(protocol: EdgeProtocol, transport: Transport) -> None:
        # A GET with a body the app does not read: answered at once, then the body stalls.
        protocol.data_received(b"GET /x HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\n12")
        await asyncio.sleep(0.05)
        assert transport.written.startswith(b"HTTP/1.1 200")
        assert not transport.closed
        protocol.data_received(b"34")  # still sending: the deadline does not move
        await asyncio.sleep(WAIT)
        assert transport.closed

    run(scenario)


def test_a_complete_body_disarms_the_deadline():
    async def scenario(protocol: EdgeProtocol, transport: Transport) -> None:
        protocol.data_received(b"POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\n\r\n12")
        protocol.data_received(b"34")
        await asyncio.sleep(WAIT)
        assert transport.written.startswith(b"HTTP/1.1 200")
        assert transport.written.endswith(b"4")
        assert not transport.closed

    run(scenario)


@pytest.mark.parametrize(
    "head",
    [
        b"GET /healthz HTTP/1.1\r\nX-Big: " + b"a" * 2048 + b"\r\n\r\n",  # in one piece
        b"GET /healthz?q=" + b"a" * 2048 + b" HTTP/1.1\r\n\r\n",  # a long request line
    ],
    ids=["header", "url"],
)
def test_a_large_head_is_431(head):
    async def scenario(protocol: EdgeProtocol, transport: Transport) -> None:
        protocol.data_received(head)
        status, _, body = transport.response()
        assert (status, body["error_code"]) == (431, "ERR_HEADERS_TOO_LARGE")
        assert body["details"]["limit"] == "1024"
        assert transport.eof
        protocol.data_received(b"more of the head")  # read and dropped until the close
        await asyncio.sleep(WAIT)
        assert transport.closed
        assert transport.response()[0] == 431

    run(scenario)


def test_a_large_head_in_pieces_is_refused_before_it_ends():
    """httptools keeps an unfinished header field whole: the bytes received are counted, so
    the refusal does not wait for the field to end."""

    async def scenario(protocol: EdgeProtocol, transport: Transport) -> None:
        protocol.data_received(b"GET /healthz HTTP/1.1\r\nX-Big: ")
        for _ in range(5):
            protocol.data_received(b"a" * 300)
        assert transport.response()[0] == 431

    run(scenario)


@pytest.mark.parametrize(
    "request_bytes",
    [
        "GET /é HTTP/1.1\r\n\r\n".encode(),
        b"NOT HTTP\r\n\r\n",
        b"GET / HTTP/1.1\r\nBad Header\r\n\r\n",
    ],
    ids=["non-ascii url", "garbage", "bad header"],
)
def test_malformed_http_is_400_with_the_error_body(request_bytes):
    async def scenario(protocol: EdgeProtocol, transport: Transport) -> None:
        protocol.data_received(request_bytes)
        status, _, body = transport.response()
        assert (status, body["error_code"]) == (400, "ERR_INVALID_REQUEST")
        assert transport.eof

    run(scenario)


def test_past_the_connection_limit_the_answer_is_503_with_the_error_body():
    state = ServerState()
    state.connections.update({object(), object()})  # two other connections are open

    async def scenario(protocol: EdgeProtocol, transport: Transport) -> None:
        protocol.data_received(b"GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n")
        await asyncio.sleep(0.05)
        status, headers, body = transport.response()
        assert (status, body["error_code"]) == (503, "ERR_SERVICE_UNAVAILABLE")
        assert headers["retry-after"] == "1"

    run(scenario, limit_concurrency=3, state=state)


def test_an_upgrade_request_is_answered_as_plain_http():
    async def scenario(protocol: EdgeProtocol, transport: Transport) -> None:
        protocol.data_received(
            b"GET /x HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n"
        )
        await asyncio.sleep(0.05)
        assert transport.written.startswith(b"HTTP/1.1 200")

    run(scenario)


def test_a_refusal_during_a_response_only_closes():
    """A pipelined request that stalls while the one before it is being answered: no second
    response is written into the first."""

    async def slow_app(scope: Any, receive: Any, send: Any) -> None:
        await asyncio.sleep(WAIT)
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    async def scenario(protocol: EdgeProtocol, transport: Transport) -> None:
        protocol.data_received(b"GET /a HTTP/1.1\r\nHost: a\r\n\r\nGET /b HTTP/1.1\r\n")
        await asyncio.sleep(WAIT * 2)
        assert transport.written.startswith(b"HTTP/1.1 204")
        assert b"408" not in transport.written
        assert transport.closed

    run(scenario, app=slow_app)


def test_a_large_pipelined_head_during_a_response_only_closes():
    async def slow_app(scope: Any, receive: Any, send: Any) -> None:
        await asyncio.sleep(WAIT)

    async def scenario(protocol: EdgeProtocol, transport: Transport) -> None:
        protocol.data_received(b"GET /a HTTP/1.1\r\nHost: a\r\n\r\nGET /b?" + b"q" * 2048)
        protocol.data_received(b"q" * 2048)
        assert transport.closed
        assert transport.written == b""

    run(scenario, app=slow_app)


def test_a_deadline_that_passes_while_the_connection_closes_writes_nothing():
    async def scenario(protocol: EdgeProtocol, transport: Transport) -> None:
        protocol.data_received(b"GET /healthz HTTP/1.1\r\n")
        transport.close()  # closing (connection_lost not called yet) when the deadline passes
        await asyncio.sleep(WAIT)
        assert transport.written == b""

    run(scenario)


def test_a_body_that_arrived_whole_is_marked_for_the_app():
    """The app sets no deadline for reading a body that is all in (tunnelgw.http.middleware);
    one still arriving when the app starts is not marked."""
    seen: list[bool] = []

    async def marking_app(scope: Any, receive: Any, send: Any) -> None:
        seen.append(edge.BODY_RECEIVED in scope.get("extensions", {}))
        await echo_app(scope, receive, send)

    async def scenario(protocol: EdgeProtocol, transport: Transport) -> None:
        protocol.data_received(b"POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\n\r\n1234")
        await asyncio.sleep(0.05)
        protocol.data_received(b"POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\n\r\n12")
        await asyncio.sleep(0.05)
        protocol.data_received(b"34")
        await asyncio.sleep(0.05)
        assert transport.written.count(b"HTTP/1.1 200") == 2
        assert transport.written.endswith(b"4")

    run(scenario, app=marking_app)
    assert seen == [True, False]


def test_a_response_goes_out_in_one_write():
    """The head is held for the body's first bytes (`edge.OneWrite`): one system call, one
    segment, per response; a streamed body's later parts follow as they come."""

    async def streaming_app(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"one", "more_body": True})
        await send({"type": "http.response.body", "body": b"two"})

    async def scenario(protocol: EdgeProtocol, transport: Transport) -> None:
        protocol.data_received(b"GET /a HTTP/1.1\r\nHost: a\r\n\r\n")
        await asyncio.sleep(0.05)
        assert len(transport.writes) == 1
        assert transport.writes[0].startswith(b"HTTP/1.1 200")
        assert transport.writes[0].endswith(b"\r\n\r\n0")  # the head and the body

    run(scenario)

    async def streamed(protocol: EdgeProtocol, transport: Transport) -> None:
        protocol.data_received(b"GET /stream HTTP/1.1\r\nHost: a\r\n\r\n")
        await asyncio.sleep(0.05)
        first, *rest = transport.writes
        assert first.startswith(b"HTTP/1.1 200")
        assert first.endswith(b"\r\n\r\n3\r\none\r\n")
        assert rest == [b"3\r\ntwo\r\n0\r\n\r\n"]

    run(streamed, app=streaming_app)


@pytest.mark.parametrize("method", ["GET", "HEAD"])
def test_a_response_without_a_body_is_written_whole(method):
    """A 204 (its body is empty) and the answer to a HEAD (no body message writes): the
    head is not left held."""

    async def empty_app(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    async def scenario(protocol: EdgeProtocol, transport: Transport) -> None:
        protocol.data_received(f"{method} /a HTTP/1.1\r\nHost: a\r\n\r\n".encode())
        await asyncio.sleep(0.05)
        assert len(transport.writes) == 1
        assert transport.writes[0].startswith(b"HTTP/1.1 204")
        assert transport.writes[0].endswith(b"\r\n\r\n")
        assert not transport.closed

    run(scenario, app=empty_app)


def test_a_head_held_when_the_app_fails_is_written_before_the_close():
    """uvicorn closes the connection when the app raises after starting its response: what
    was held goes out first, as it did when the head was written at once."""

    async def failing_app(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        raise RuntimeError("the app failed mid-response")

    async def scenario(protocol: EdgeProtocol, transport: Transport) -> None:
        protocol.data_received(b"GET /a HTTP/1.1\r\nHost: a\r\n\r\n")
        await asyncio.sleep(0.05)
        assert transport.closed
        assert transport.written.startswith(b"HTTP/1.1 200")

    run(scenario, app=failing_app)


def test_100_continue_is_written_before_the_response():
    async def scenario(protocol: EdgeProtocol, transport: Transport) -> None:
        protocol.data_received(
            b"POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n"
        )
        await asyncio.sleep(0.05)
        assert transport.writes == [b"HTTP/1.1 100 Continue\r\n\r\n"]
        protocol.data_received(b"1234")
        await asyncio.sleep(0.05)
        assert len(transport.writes) == 2
        assert transport.writes[1].startswith(b"HTTP/1.1 200")
        assert transport.writes[1].endswith(b"4")

    run(scenario)
