"""What every route shares: version header, authentication, routing errors, body parsing,
size and content-type limits, the error body, the docs routes."""

from __future__ import annotations

import pytest

from tests.conftest import MAX_BODY_BYTES
from tests.factories import assert_error


def test_version_header_missing_or_unsupported(admin):
    body = assert_error(admin.get("/api_keys", version=None), 400, "ERR_VERSION_HEADER_MISSING")
    assert body["details"]["param"] == "Service-Version"
    for value in ("1", "3", "2.0", ""):
        assert_error(admin.get("/api_keys", version=value), 400, "ERR_VERSION_UNSUPPORTED")
    # Header names match case-insensitively.
    ok = admin.get("/api_keys", version=None, headers={"service-VERSION": "2"})
    assert ok.status_code == 200


def test_version_is_checked_before_credentials(factory):
    anonymous = factory.client(None)
    assert_error(anonymous.get("/api_keys", version=None), 400, "ERR_VERSION_HEADER_MISSING")


@pytest.mark.parametrize(
    ("headers", "code"),
    [
        ({}, "ERR_AUTHENTICATION_REQUIRED"),
        ({"Authorization": "Bearer"}, "ERR_INVALID_CREDENTIALS"),
        ({"Authorization": "Bearer not-a-key"}, "ERR_INVALID_CREDENTIALS"),
        ({"Authorization": "Basic dXNlcjpwdw=="}, "ERR_INVALID_CREDENTIALS"),
        ({"Authorization": "Bearer " + "x" * 600}, "ERR_INVALID_CREDENTIALS"),
        ({"authorization": "bearer tgw_unknown"}, "ERR_INVALID_CREDENTIALS"),
    ],
)
def test_bad_credentials_are_401(factory, headers, code):
    client = factory.client(None)
    for method, path in (("GET", "/api_keys"), ("POST", "/backends/http_response")):
        assert_error(client.request(method, path, headers=headers), 401, code)


def test_unknown_route_and_wrong_method(admin):
    assert_error(admin.get("/nope"), 404, "ERR_ROUTE_NOT_FOUND")
    response = admin.put("/api_keys", json={})
    assert_error(response, 405, "ERR_METHOD_NOT_ALLOWED")
    assert set(response.headers["allow"].replace(" ", "").split(",")) >= {"GET", "POST"}


@pytest.mark.parametrize(
    ("content", "code"),
    [
        (b'{"description":', "ERR_INVALID_JSON"),
        (b'{"description": "a", "description": "b"}', "ERR_INVALID_JSON"),
        (b'{"description": "\\u0000"}', "ERR_INVALID_JSON"),
        (b'{"description": "\\ud800"}', "ERR_INVALID_JSON"),
        (b'{"description": "\xff"}', "ERR_INVALID_JSON"),
        (b'{"status_code": NaN}', "ERR_INVALID_JSON"),
        (b"[" * 10_000 + b"]" * 10_000, "ERR_INVALID_JSON"),
        (b'{"a":' * 40 + b"1" + b"}" * 40, "ERR_INVALID_JSON"),
        (b"[]", "ERR_INVALID_BODY"),
        (b"null", "ERR_INVALID_BODY"),
        (b'"text"', "ERR_INVALID_BODY"),
        (b"123", "ERR_INVALID_BODY"),
        (b" ", "ERR_INVALID_JSON"),
        (b"\n\t", "ERR_INVALID_JSON"),
        (b'{"description": 1e999}', "ERR_WRONG_TYPE"),
    ],
)
def test_hostile_bodies_are_400_and_write_nothing(admin, content, code):
    before = admin.get("/backends/http_response").json()["backends"]
    for method, path in (("POST", "/backends/http_response"), ("POST", "/api_keys")):
        response = admin.request(
            method, path, content=content, headers={"Content-Type": "application/json"}
        )
        assert_error(response, 400, code)
    assert admin.get("/backends/http_response").json()["backends"] == before


def test_oversize_body_is_413(admin):
    big = b'{"body": "' + b"x" * MAX_BODY_BYTES + b'"}'
    body = assert_error(
        admin.post(
            "/backends/http_response", content=big, headers={"Content-Type": "application/json"}
        ),
        413,
        "ERR_BODY_TOO_LARGE",
    )
    assert body["details"]["limit"] == str(MAX_BODY_BYTES)

    def chunks():  # no Content-Length: counted while streaming
        yield b'{"body": "'
        for _ in range(MAX_BODY_BYTES // 1024 + 1):
            yield b"x" * 1024
        yield b'"}'

    streamed = admin.http.post(
        "/backends/http_response",
        content=chunks(),
        headers={
            "Authorization": f"Bearer {admin.token}",
            "Service-Version": "2",
            "Content-Type": "application/json",
        },
    )
    admin.validator.check(streamed)
    assert_error(streamed, 413, "ERR_BODY_TOO_LARGE")


@pytest.mark.parametrize(
    "content_type", ["text/plain", "application/xml", "application/x-www-form-urlencoded"]
)
def test_non_json_body_is_415(admin, content_type):
    headers = {"Content-Type": content_type}
    response = admin.post("/backends/http_response", content=b"hello", headers=headers)
    assert_error(response, 415, "ERR_UNSUPPORTED_MEDIA_TYPE")


def test_body_without_content_type_is_read_as_json(admin):
    created = admin.post("/backends/http_response", content=b'{"body": "x"}')
    assert created.status_code == 201
    assert created.json()["body"] == "x"
    assert_error(admin.post("/backends/http_response", content=b"hello"), 400, "ERR_INVALID_JSON")


def test_json_content_type_on_get_and_delete_is_accepted(admin):
    json_header = {"Content-Type": "application/json"}
    assert admin.get("/api_keys", headers=json_header).status_code == 200
    key = admin.post("/api_keys", json={}).json()
    assert admin.delete(f"/api_keys/{key['id']}", headers=json_header).status_code == 204


def test_json_with_charset_is_accepted(admin):
    response = admin.post(
        "/api_keys",
        content=b'{"description": "x"}',
        headers={"Content-Type": "application/json; charset=utf-8"},
    )
    assert response.status_code == 201


def test_every_response_carries_an_operation_id(admin):
    ok = admin.get("/api_keys")
    failed = admin.get("/api_keys/ak_missing")
    assert ok.headers["operation-id"].startswith("op_")
    assert failed.json()["details"]["operation_id"] == failed.headers["operation-id"]
    assert ok.headers["operation-id"] != failed.headers["operation-id"]


@pytest.mark.inprocess
def test_public_url_comes_from_the_request_host(admin):
    listed = admin.get("/api_keys", headers={"Host": "api.example.test:9000"}).json()
    assert listed["uri"] == "http://api.example.test:9000/api_keys"
    assert listed["keys"][0]["uri"].startswith("http://api.example.test:9000/api_keys/ak_")


def test_docs_and_health_need_no_credentials(factory):
    anonymous = factory.client(None)
    health = anonymous.get("/healthz", version=None)
    assert health.json() == {"status": "ok"}
    spec = anonymous.http.get("/openapi.json")
    assert spec.status_code == 200
    assert spec.json()["info"]["title"] == "Tunnel Gateway Management API"
    assert anonymous.http.get("/openapi.yaml").status_code == 200
    assert anonymous.http.get("/ui/").status_code == 200


@pytest.mark.inprocess
def test_access_log_line_per_request(admin, caplog):
    with caplog.at_level("INFO", logger="tunnelgw.access"):
        response = admin.get("/api_keys", params={"limit": 1})
    lines = [r for r in caplog.records if r.name == "tunnelgw.access"]
    assert len(lines) == 1
    line = lines[0]
    assert (line.method, line.path, line.status) == ("GET", "/api_keys", 200)
    assert line.operation_id == response.headers["operation-id"]
    assert line.spec_operation == "handlers.api_keys.list"
    assert line.duration_ms >= 0


@pytest.mark.inprocess
def test_access_log_names_the_operation_with_a_bare_asgi_scope(admin, factory, caplog):
    """uvicorn's scope has no `extensions` (the test client's has): the log must still name
    the routed operation."""
    import httpx

    async def call() -> httpx.Response:
        transport = httpx.ASGITransport(app=factory.http.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as c:
            return await c.get(
                "/api_keys",
                headers={"Authorization": f"Bearer {admin.token}", "Service-Version": "2"},
            )

    with caplog.at_level("INFO", logger="tunnelgw.access"):
        response = factory._run(call)
    admin.validator.check(response)
    line = next(r for r in caplog.records if r.name == "tunnelgw.access")
    assert line.spec_operation == "handlers.api_keys.list"


@pytest.mark.parametrize(
    ("query", "param"),
    [
        ("bogus=1", "bogus"),  # undeclared: refused, never ignored
        ("limit=5&limit=6", "limit"),  # not an array, given twice
        ("limit=%C2%853", "limit"),  # U+0085 then 3: int() would read 3
        ("limit=%D9%A3", "limit"),  # ARABIC-INDIC DIGIT THREE
        ("limit=+3", "limit"),
        ("limit=1e2", "limit"),
        ("limit=" + "9" * 40, "limit"),
        ("limit=0", "limit"),
        ("before_id=ak_short", "before_id"),
    ],
)
def test_query_parameters_are_strict(admin, query, param):
    body = assert_error(admin.get(f"/api_keys?{query}"), 400, "ERR_INVALID_PARAMETER")
    assert body["details"]["param"] == param


def test_path_parameters_are_validated_before_the_handler(admin):
    body = assert_error(
        admin.get("/event_subscriptions/nope/sources"), 400, "ERR_INVALID_PARAMETER"
    )
    assert body["details"]["param"] == "subscription_id"
