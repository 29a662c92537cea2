"""Issue 19: the published spec. `/openapi.json` and `/openapi.yaml` keep the source's named
components and `$ref`s, name the server they were fetched from, answer `If-None-Match` with
304 and gzip when asked; rendering happens once, off the event loop, so a spec request (slow
or not) never holds up `/healthz`."""

from __future__ import annotations

import asyncio
import gzip
import socket
import statistics
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import orjson
import pytest
import yaml
from starlette.testclient import TestClient

from tunnelgw.core import spec
from tunnelgw.core.settings import Settings
from tunnelgw.http import published
from tunnelgw.http.app import apply_settings, create_app
from tunnelgw.migrations import migrate
from tunnelgw.testing import TunnelgwServer

SOURCE = spec.load()
SPEC_PATHS = ("/openapi.json", "/openapi.yaml")


def _refs(node: Any) -> Iterator[str]:
    yield from published._refs(node)


def _resolves(document: dict[str, Any], ref: str) -> bool:
    node: Any = document
    for part in ref.removeprefix("#/").split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
    return True


def _parsed(response: httpx.Response) -> dict[str, Any]:
    document: dict[str, Any] = (
        response.json() if response.url.path.endswith(".json") else yaml.safe_load(response.text)
    )
    return document


def _raw(client: httpx.Client, path: str, **headers: str) -> tuple[httpx.Response, bytes]:
    """A response and its body as sent (not decoded)."""
    with client.stream("GET", path, headers=headers) as response:
        return response, b"".join(response.iter_raw())


# --- the document ---------------------------------------------------------------------------


@pytest.mark.parametrize("path", SPEC_PATHS)
def test_the_served_spec_is_the_source_with_its_components_and_refs(http, settings, path):
    served = _parsed(http.get(path))
    assert served["servers"] == [
        {"url": "http://testserver", "description": "The server that published this document."}
    ]
    expected = published.reachable(apply_settings(spec.load(), settings))
    assert {k: v for k, v in served.items() if k != "servers"} == {
        k: v for k, v in expected.items() if k != "servers"
    }
    # The suite's server has the admin API on: every named schema of the source is served.
    assert list(served["components"]["schemas"]) == list(SOURCE["components"]["schemas"])
    refs = list(_refs(served))
    assert len(refs) > 1000
    assert all(_resolves(served, ref) for ref in refs)
    assert "#/components/schemas/ApiKey" in refs


def test_both_forms_are_the_same_document(http):
    assert _parsed(http.get("/openapi.yaml")) == http.get("/openapi.json").json()


@pytest.mark.inprocess
def test_the_servers_entry_is_the_host_the_request_reached(http):
    for path in SPEC_PATHS:
        served = _parsed(http.get(path, headers={"Host": "api.example.test:9000"}))
        assert served["servers"][0]["url"] == "http://api.example.test:9000"
        # A host that needs quoting stays a string of the document.
        served = _parsed(http.get(path, headers={"Host": 'odd"host: #x'}))
        assert served["servers"][0]["url"] == 'http://odd"host: #x'
    assert http.get("/openapi.json").json()["servers"][0]["url"] == "http://testserver"


def _app_client(tmp_path_factory: pytest.TempPathFactory, **settings: Any) -> TestClient:
    config = Settings(data_dir=tmp_path_factory.mktemp("published"), **settings)
    migrate.upgrade(config.resolved_database_url())
    return TestClient(create_app(config))


def test_a_configured_public_url_is_the_server(tmp_path_factory):
    with _app_client(tmp_path_factory, public_url="https://api.example.test/") as client:
        for path in SPEC_PATHS:
            assert _parsed(client.get(path))["servers"][0]["url"] == "https://api.example.test"


def test_without_the_admin_api_its_components_are_not_served_either(tmp_path_factory):
    with _app_client(tmp_path_factory, admin_api=False) as client:
        served = client.get("/openapi.json").json()
    schemas = served["components"]["schemas"]
    assert not [name for name in schemas if name.startswith("Admin")]
    assert not {"TooManyRequests", "InternalError"} & set(served["components"]["responses"])
    assert {"ApiKey", "Error"} <= set(schemas)
    assert all(_resolves(served, ref) for ref in _refs(served))
    # Whatever the source names and any served path reaches is still there.
    reached = {ref.rpartition("/")[2] for ref in _refs(served["paths"])}
    assert reached <= set(schemas) | set(served["components"]["responses"]) | set(
        served["components"]["parameters"]
    )


# --- ETag, 304, gzip ------------------------------------------------------------------------


@pytest.mark.parametrize("path", SPEC_PATHS)
def test_etag_and_if_none_match(http, path):
    first = http.get(path, headers={"Accept-Encoding": "identity"})
    etag = first.headers["etag"]
    assert (etag[0], first.headers["cache-control"]) == ('"', "no-cache")
    assert http.get(path, headers={"Accept-Encoding": "identity"}).headers["etag"] == etag
    for value in (etag, f'"x", W/{etag}', "*"):
        again = http.get(path, headers={"If-None-Match": value, "Accept-Encoding": "identity"})
        assert (again.status_code, again.content, again.headers["etag"]) == (304, b"", etag)
    zipped = http.get(path, headers={"If-None-Match": etag, "Accept-Encoding": "gzip"})
    assert zipped.status_code == 304
    assert zipped.headers["etag"] != etag  # the gzip one
    other = http.get(path, headers={"If-None-Match": '"something-else"'})
    assert (other.status_code, other.content) == (200, first.content)


@pytest.mark.parametrize("path", SPEC_PATHS)
def test_gzip_when_the_client_accepts_it(http, path):
    plain, plain_body = _raw(http, path, **{"Accept-Encoding": "identity"})
    assert "content-encoding" not in plain.headers
    assert int(plain.headers["content-length"]) == len(plain_body)
    assert plain.headers["vary"] == "Accept-Encoding"
    for accept in ("gzip", "br;q=1.0, gzip;q=0.5", "*", "x-gzip"):
        zipped, body = _raw(http, path, **{"Accept-Encoding": accept})
        assert zipped.headers["content-encoding"] == "gzip", accept
        assert int(zipped.headers["content-length"]) == len(body) < len(plain_body) // 4
        assert gzip.decompress(body) == plain_body
    for refused in ("gzip;q=0", "br", "identity, *;q=0", "gzip;q=x"):
        response, body = _raw(http, path, **{"Accept-Encoding": refused})
        assert "content-encoding" not in response.headers, refused
        assert body == plain_body, refused


def test_head_answers_the_headers_alone(http):
    got = http.get("/openapi.json", headers={"Accept-Encoding": "identity"})
    head = http.head("/openapi.json", headers={"Accept-Encoding": "identity"})
    assert (head.status_code, head.content) == (200, b"")
    assert head.headers["content-length"] == str(len(got.content))
    assert head.headers["etag"] == got.headers["etag"]


def test_other_methods_on_the_spec_paths_are_405(http):
    response = http.post("/openapi.json", content=b"{}")
    assert response.status_code == 405
    assert response.json()["error_code"] == "ERR_METHOD_NOT_ALLOWED"


@pytest.mark.parametrize(
    ("value", "accepted"),
    [
        (b"", False),
        (b"gzip", True),
        (b"GZIP", True),
        (b"deflate, gzip;q=0.1", True),
        (b"gzip;q=0", False),
        (b"gzip;q=0.0, *", False),
        (b"*;q=0.5", True),
        (b"br, *;q=0", False),
        (b"gzip; q=bad", False),
        (b",,gzip", True),
    ],
)
def test_accept_encoding(value, accepted):
    assert published.accepts_gzip(value) is accepted


@pytest.mark.parametrize(
    ("value", "matched"),
    [
        (None, False),
        (b"", False),
        (b'"a"', True),
        (b'W/"a"', True),
        (b'"x", "b"', True),
        (b'"x"', False),
        (b"*", True),
        (b"a", False),
    ],
)
def test_if_none_match(value, matched):
    assert published.matches(value, (b'"a"', b'"b"')) is matched


# --- made once, off the event loop ----------------------------------------------------------


def test_the_document_is_made_once_in_a_worker_thread(monkeypatch):
    calls: list[int] = []
    renditions: list[int] = []

    def document() -> dict[str, Any]:
        calls.append(threading.get_ident())
        return spec.load()

    def rendition(body: bytes) -> published.Rendition:
        renditions.append(threading.get_ident())
        return made(body)

    made = published.Rendition.of
    monkeypatch.setattr(published.Rendition, "of", rendition)
    spec_endpoint = published.PublishedSpec(document)

    async def fetch(form: str, base: str) -> published.Rendition:
        return await spec_endpoint.rendition(form, base)

    first = asyncio.run(fetch("json", "http://a.test"))
    assert len(calls) == 1
    assert calls[0] != threading.get_ident()  # not the event loop's thread
    assert asyncio.run(fetch("json", "http://a.test")) is first
    yaml_form = asyncio.run(fetch("yaml", "http://b.test"))
    assert len(calls) == 1
    assert orjson.loads(first.body)["servers"][0]["url"] == "http://a.test"
    assert yaml.safe_load(yaml_form.body)["servers"][0]["url"] == "http://b.test"
    for n in range(published.KEPT_RENDITIONS + 5):  # a bounded number of renditions is kept
        asyncio.run(fetch("json", f"http://host{n}.test"))
    assert len(spec_endpoint._renditions) == published.KEPT_RENDITIONS
    assert len(calls) == 1
    assert threading.get_ident() not in renditions  # each one made in a worker thread too


# --- on a live server -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def live() -> Iterator[TunnelgwServer]:
    with TunnelgwServer() as server:
        yield server


def test_a_live_server_publishes_named_schemas_refs_and_its_address(live):
    with httpx.Client(base_url=live.base_url, timeout=30) as client:
        served = client.get("/openapi.json").json()
    assert served["servers"][0]["url"] == live.base_url
    assert set(SOURCE["components"]["schemas"]) == set(served["components"]["schemas"])
    assert '"$ref":"#/components/schemas/ApiKey"' in orjson.dumps(served).decode()


def _slow_reader(base_url: str) -> socket.socket:
    """A client that asks for the YAML form with a tiny receive window and reads a little."""
    host, port = base_url.removeprefix("http://").split(":")
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.settimeout(10)
    sock.connect((host, int(port)))
    sock.sendall(
        f"GET /openapi.yaml HTTP/1.1\r\nHost: slow-{uuid.uuid4().hex}.test\r\n\r\n".encode()
    )
    assert sock.recv(1024).startswith(b"HTTP/1.1 200")
    return sock


def test_a_slow_spec_request_does_not_delay_healthz(live):
    """Spec requests in flight (a reader that stalls, first renditions for new hosts) while
    /healthz is timed; each probe must answer in a fraction of what one rendering on the
    event loop took (1.6 s and more before)."""
    deadline = time.monotonic() + 60
    hosts = [f"cold-{uuid.uuid4().hex}.test" for _ in range(6)]
    done = threading.Event()
    statuses: list[int] = []

    def spec_requests() -> None:
        with httpx.Client(base_url=live.base_url, timeout=30) as client:
            for n, host in enumerate(hosts):
                path = SPEC_PATHS[n % 2]
                statuses.append(client.get(path, headers={"Host": host}).status_code)
        done.set()

    slow = _slow_reader(live.base_url)
    worker = threading.Thread(target=spec_requests)
    probes: list[float] = []
    try:
        with httpx.Client(base_url=live.base_url, timeout=30) as client:
            worker.start()
            while (not done.is_set() or len(probes) < 20) and time.monotonic() < deadline:
                started = time.perf_counter()
                assert client.get("/healthz").status_code == 200
                probes.append(time.perf_counter() - started)
    finally:
        worker.join(timeout=60)
        slow.close()
    assert statuses == [200] * len(hosts)
    assert max(probes) < 0.5, sorted(probes)[-5:]
    # And a spec request itself costs milliseconds once its rendition is made.
    with httpx.Client(base_url=live.base_url, timeout=30) as client:
        for path in SPEC_PATHS:
            timings = []
            for _ in range(5):
                started = time.perf_counter()
                assert client.get(path).status_code == 200
                timings.append(time.perf_counter() - started)
            assert statistics.median(timings) < 0.1, (path, timings)
