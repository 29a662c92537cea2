"""The error catalog: one list, kept equal in the code, the spec and docs/errors.md."""

from __future__ import annotations

import json
import re
from pathlib import Path

from connexion.exceptions import (
    BadRequestProblem,
    ExtraParameterProblem,
    NonConformingResponseBody,
    OAuthProblem,
    UnsupportedMediaTypeProblem,
)
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect

from tunnelgw.core.errors import ApiError, Code, catalog
from tunnelgw.core.spec import load as load_spec
from tunnelgw.http.rendering import ErrorRenderer, to_api_error

ROOT = Path(__file__).resolve().parents[2]


def test_catalog_equals_spec_enum():
    spec = load_spec()
    enum = spec["components"]["schemas"]["Error"]["properties"]["error_code"]["enum"]
    assert enum == [code.error_code for code in catalog()]


def test_catalog_equals_docs_table():
    page = (ROOT / "docs" / "errors.md").read_text()
    rows = re.findall(r"^\| `(ERR_[A-Z_]+)` \| (\d{3}) \|", page, flags=re.M)
    assert rows == [(code.error_code, str(code.status)) for code in catalog()]


def test_error_body_shape():
    error = ApiError(Code.NOT_FOUND, "gone", id="ak_x")
    assert error.status_code == 404
    assert error.body("op_1") == {
        "error_code": "ERR_NOT_FOUND",
        "status_code": 404,
        "msg": "gone",
        "details": {"id": "ak_x", "operation_id": "op_1"},
    }
    assert "ERR_NOT_FOUND" in repr(error)
    assert ApiError(Code.CONFLICT).msg == Code.CONFLICT.message


def test_foreign_exceptions_map_to_catalog_codes():
    cases = [
        (UnsupportedMediaTypeProblem(), None, Code.UNSUPPORTED_MEDIA_TYPE),
        (
            ExtraParameterProblem(param_type="query", extra_params=["x"]),
            None,
            Code.INVALID_PARAMETER,
        ),
        (BadRequestProblem("bad"), None, Code.INVALID_BODY),
        (OAuthProblem(), {}, Code.AUTHENTICATION_REQUIRED),
        (OAuthProblem(), {"authorization": "x"}, Code.INVALID_CREDENTIALS),
        (NonConformingResponseBody("oops"), None, Code.INTERNAL),
        (HTTPException(404), None, Code.ROUTE_NOT_FOUND),
        (HTTPException(405, headers={"Allow": "GET"}), None, Code.METHOD_NOT_ALLOWED),
        (HTTPException(418), None, Code.INTERNAL),
        (RuntimeError("bug"), None, Code.INTERNAL),
        (ClientDisconnect(), None, Code.INVALID_BODY),
    ]
    for exc, headers, code in cases:
        assert to_api_error(exc, headers).code is code, exc


def test_allow_lists_every_method_of_a_templated_path():
    renderer = ErrorRenderer(
        {
            "paths": {
                "/things": {"get": {}, "post": {}},
                "/things/{id}": {"get": {}, "delete": {}, "parameters": []},
            }
        }
    )
    assert renderer.allowed("/things") == ["GET", "POST"]
    assert renderer.allowed("/things/abc") == ["DELETE", "GET"]
    assert renderer.allowed("/things/abc/more") == []


def test_unexpected_exception_renders_internal_error_and_logs(caplog):
    from starlette.requests import Request

    scope = {
        "type": "http",
        "method": "GET",
        "path": "/x",
        "headers": [],
        "query_string": b"",
        "server": ("test", 80),
        "scheme": "http",
        "root_path": "",
    }
    renderer = ErrorRenderer({"paths": {}})
    with caplog.at_level("ERROR", logger="tunnelgw.errors"):
        response = renderer(Request(scope), RuntimeError("bug"))
    assert response.status_code == 500
    body = json.loads(response.body)
    assert body["error_code"] == "ERR_INTERNAL"
    assert body["details"]["operation_id"].startswith("op_")
    assert "bug" in caplog.text
