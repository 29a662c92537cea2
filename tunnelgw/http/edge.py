"""The HTTP/1.1 protocol `tunnelgw serve` runs: uvicorn's httptools protocol with the limits
uvicorn has no setting for, and the Error body for every request it refuses itself.

- A request's head (request line and headers) must arrive within `header_timeout` seconds of
  its first byte (of the connection's opening, for the first request): 408, or a silent close
  when nothing was sent. Its body must arrive within `body_timeout` seconds of the head: the
  app answers 408 (tunnelgw.http.middleware) and the connection closes.
  A request whose body is all in when the app starts it is marked (the ASGI scope extension
  `BODY_RECEIVED`): the app sets no deadline of its own for reading it.
- A head larger than `max_header_bytes` is 431, without reading the rest of it.
- Malformed HTTP (raw non-ASCII in the URL, a URL httptools cannot parse...) is 400
  `ERR_INVALID_REQUEST`; past uvicorn's `limit_concurrency`, 503 `ERR_SERVICE_UNAVAILABLE`.
- After such an answer the connection half-closes and what the client still sends is read and
  dropped for `LINGER_SECONDS`, so a client still sending (a large head) reads the answer
  rather than a reset.
- A response's head goes out with its body's first bytes, in one write (`OneWrite`).
Keep-alive idle time is uvicorn's own `timeout_keep_alive`. Imports stay light: uvicorn loads
this module in each worker before the app (`tunnelgw.worker`).
"""

from __future__ import annotations

import logging
from asyncio import TimerHandle
from typing import Any, NamedTuple

import httptools
import orjson
from uvicorn.protocols.http.flow_control import service_unavailable
from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

from tunnelgw.core import ids
from tunnelgw.core.errors import ApiError, Code

log = logging.getLogger("tunnelgw.edge")

# Between requests (keep-alive), in a request's head, in its body; refused (closing).
IDLE, HEAD, BODY, REFUSED = "idle", "head", "body", "refused"
# The scope extension of a request whose body has arrived whole: reading it cannot stall.
BODY_RECEIVED = "tunnelgw.body_received"
LINGER_SECONDS = 2.0


class Limits(NamedTuple):
    """The protocol's limits (from tunnelgw.core.settings: header_timeout_seconds,
    body_timeout_seconds, max_header_bytes)."""

    header_timeout: float
    body_timeout: float
    max_header_bytes: int


class EdgeProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with head and body deadlines, a head size limit and Error
    bodies (see the module docstring). Made per connection by uvicorn."""

    def __init__(self, *args: Any, limits: Limits, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.limits = limits
        self._state = IDLE
        # Received while in a head: bounds what httptools buffers of an unfinished head.
        self._head_bytes = 0
        self._timer: TimerHandle | None = None
        self._refusal: ApiError | None = None

    # Connection events
    def connection_made(self, transport: Any) -> None:
        super().connection_made(transport)
        # The first request's head is due from the opening on: a silent client is closed.
        self._arm(self.limits.header_timeout)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._state == REFUSED:
            return  # dropped while the answer is read (see `_refuse`)
        self._unset_keepalive_if_required()
        if self._state != BODY:
            self._head_bytes += len(data)
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:  # `ws="none"` (no WebSocket endpoint): plain HTTP
            self._unsupported_upgrade_warning()
        except httptools.HttpParserError:
            self._refuse(self._refusal or ApiError(Code.INVALID_REQUEST))
            return
        if self._state == HEAD and self._head_bytes > self.limits.max_header_bytes:
            self._refuse(self._too_large())
        elif self._state != IDLE and self._timer is None:
            timeout = (
                self.limits.header_timeout if self._state == HEAD else self.limits.body_timeout
            )
            self._arm(timeout)

    # Parser callbacks
    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._state = HEAD

    def on_headers_complete(self) -> None:
        limit = self.limits.max_header_bytes
        if self._head_bytes > limit and self._head_size() > limit:
            self._refusal = self._too_large()
            raise self._refusal  # stops the parser: data_received answers
        self._disarm()
        self._state = BODY
        self._head_bytes = 0
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        self._disarm()
        self._state = IDLE
        extensions = self.scope.get("extensions")
        if extensions is None:
            extensions = self.scope["extensions"] = {}
        extensions[BODY_RECEIVED] = {}
        super().on_message_complete()

    def _start_asgi_task(self, cycle: Any, app: Any) -> None:
        if cycle.scope["method"] != "HEAD":  # a HEAD response is its head alone
            cycle.transport = OneWrite(cycle)
        # Past `limit_concurrency` uvicorn picks its plain-text 503; ours is the Error body.
        super()._start_asgi_task(cycle, _over_capacity if app is service_unavailable else app)

    # Limits
    def _head_size(self) -> int:
        """The request line and header fields as received (the bytes received may hold more:
        the body, or the end of the request before)."""
        return len(self.url) + sum(len(name) + len(value) + 4 for name, value in self.headers)

    def _too_large(self) -> ApiError:
        limit = self.limits.max_header_bytes
        return ApiError(
            Code.HEADERS_TOO_LARGE,
            f"The request line and headers are larger than {limit} bytes.",
            limit=str(limit),
        )

    def _arm(self, seconds: float) -> None:
        self._disarm()
        self._timer = self.loop.call_later(seconds, self._expired)

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _expired(self) -> None:
        self._timer = None
        if self.transport.is_closing():
            return
        answering = self.cycle is not None and not self.cycle.response_complete
        if self._state == HEAD and not answering:
            seconds = self.limits.header_timeout
            self._refuse(
                ApiError(
                    Code.REQUEST_TIMEOUT,
                    f"The request line and headers did not arrive within {seconds:g} seconds.",
                )
            )
        elif answering:
            # The app has the request (it answers a stalled body 408 itself): close after it.
            self.cycle.keep_alive = False
        else:  # a silent new connection, or a body the app did not wait for
            self.transport.close()

    def _refuse(self, error: ApiError) -> None:
        """Answer `error` with the Error body and close (at once when a response is under way:
        no answer then)."""
        self._disarm()
        op_id = ids.new_operation_id(probe=True)  # timing-dependent: not in the id sequence
        log.info("%d %s from %s (%s)", error.code.status, error.code.error_code, _peer(self), op_id)
        if self.cycle is not None and not self.cycle.response_complete:
            self.transport.close()
            return
        self.transport.write(_response(error, op_id, self.server_state.default_headers))
        # Closing with unread bytes would reset the connection, and the client could lose
        # the answer: half-close, drop what still arrives for a while, then close.
        self._state = REFUSED
        self.flow.resume_reading()
        if self.transport.can_write_eof():  # TCP; not TLS
            self.transport.write_eof()
        self._timer = self.loop.call_later(LINGER_SECONDS, self.transport.close)


class OneWrite:
    """The connection's transport as one response's cycle writes to it: the response's head
    (status line and headers, uvicorn's first write once the response has started) is held
    and goes out with the body's first bytes in one write. uvicorn writes them apart: two
    system calls and, with TCP_NODELAY, two segments the client reads apart, for every
    response. Any other use of the transport (close, is_closing, ...) writes what is held
    first, so nothing is held past the cycle's last write."""

    __slots__ = ("cycle", "held", "transport")

    def __init__(self, cycle: Any) -> None:
        self.cycle = cycle
        self.transport = cycle.transport
        self.held: bytes | None = None

    def write(self, data: bytes) -> None:
        if self.held is not None:  # the body's first bytes: out with the head
            self.flush(data)
        elif self.cycle.response_started:  # the head: held for the body
            self.held = data
        else:  # before the response (`100 Continue`)
            self.transport.write(data)

    def flush(self, data: bytes = b"") -> None:
        """Write what is held (with `data`), and hand the cycle the transport itself."""
        held = self.held
        if held is not None:
            self.held = None
            self.cycle.transport = self.transport
            self.transport.write(held + data)

    def __getattr__(self, name: str) -> Any:
        self.flush()
        return getattr(self.transport, name)


def _response(error: ApiError, op_id: str, default_headers: list[tuple[bytes, bytes]]) -> bytes:
    """The whole HTTP response of `error` (uvicorn's `date` and `server` headers first)."""
    body = orjson.dumps(error.body(op_id))
    head = [
        STATUS_LINE[error.code.status],
        *(b"%s: %s\r\n" % header for header in default_headers),
        b"content-type: application/json\r\n",
        b"content-length: %d\r\n" % len(body),
        b"operation-id: %s\r\n" % op_id.encode(),
        b"connection: close\r\n",
        b"\r\n",
    ]
    return b"".join(head) + body


async def _over_capacity(scope: Any, receive: Any, send: Any) -> None:
    """The answer past uvicorn's `limit_concurrency` (connections or requests in flight)."""
    op_id = ids.new_operation_id(probe=True)
    error = ApiError(
        Code.SERVICE_UNAVAILABLE, "The server has as many connections as it takes; retry later."
    )
    body = orjson.dumps(error.body(op_id))
    await send(
        {
            "type": "http.response.start",
            "status": 503,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", b"%d" % len(body)),
                (b"operation-id", op_id.encode()),
                (b"retry-after", b"1"),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def _peer(protocol: HttpToolsProtocol) -> str:
    client = protocol.client
    return f"{client[0]}:{client[1]}" if client else "-"
