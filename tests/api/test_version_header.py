"""Issue 10, item 1: the version header under another name (TUNNELGW_VERSION_HEADER_ALIASES /
`serve --version-header-alias`), with the same value rule, and a 400 that names the header a
client sent instead and the setting that accepts it."""

from __future__ import annotations

import pytest

from tests.conftest import VERSION_HEADER_ALIAS
from tests.factories import assert_error
from tunnelgw.core.settings import Settings
from tunnelgw.http import app
from tunnelgw.http.pipeline import parameters
from tunnelgw.http.pipeline.operation import OperationMiddleware


def test_alias_is_accepted_in_place_of_service_version(admin):
    for name in (VERSION_HEADER_ALIAS, VERSION_HEADER_ALIAS.upper(), VERSION_HEADER_ALIAS.lower()):
        response = admin.get("/api_keys", version=None, headers={name: "2"})
        assert response.status_code == 200, response.text
    created = admin.post(
        "/api_keys", version=None, headers={VERSION_HEADER_ALIAS: "2"}, json={"description": "a"}
    )
    assert created.status_code == 201


def test_alias_follows_the_same_value_rule(admin):
    for value in ("1", "3", "2.0", "", "v2"):
        body = assert_error(
            admin.get("/api_keys", version=None, headers={VERSION_HEADER_ALIAS: value}),
            400,
            "ERR_VERSION_UNSUPPORTED",
        )
        assert body["details"]["param"] == "Service-Version"
        assert VERSION_HEADER_ALIAS.lower() in body["msg"]


def test_missing_header_names_the_other_version_header_and_the_setting(admin):
    body = assert_error(
        admin.get("/api_keys", version=None, headers={"Vendor-Version": "2"}),
        400,
        "ERR_VERSION_HEADER_MISSING",
    )
    assert "vendor-version" in body["msg"]
    assert "TUNNELGW_VERSION_HEADER_ALIASES" in body["msg"]
    assert "--version-header-alias" in body["msg"]
    plain = assert_error(admin.get("/api_keys", version=None), 400, "ERR_VERSION_HEADER_MISSING")
    assert "TUNNELGW_VERSION_HEADER_ALIASES" not in plain["msg"]


def test_an_unrelated_header_is_not_an_alias(admin):
    assert_error(
        admin.get("/api_keys", version=None, headers={"X-Version-Note": "2"}),
        400,
        "ERR_VERSION_HEADER_MISSING",
    )


def test_service_version_still_works_and_wins_when_both_are_sent(admin):
    assert admin.get("/api_keys").status_code == 200
    both = admin.get("/api_keys", headers={VERSION_HEADER_ALIAS: "2"})
    assert both.status_code == 200


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("", []),
        ("ngrok-version", ["ngrok-version"]),
        (" A-Version , b-version,a-version,, Service-Version ", ["a-version", "b-version"]),
    ],
)
def test_alias_setting_parsing(value, expected):
    assert Settings(version_header_aliases=value).version_header_alias_list() == expected


@pytest.mark.parametrize("value", ["bad header", "x:y", "é-version"])
def test_alias_setting_rejects_non_header_names(value):
    with pytest.raises(ValueError, match="not an HTTP header name"):
        Settings(version_header_aliases=value)


def test_default_is_service_version_only():
    assert Settings().version_header_alias_list() == []
    state = app.state_of(app.create_app(Settings(version_header_aliases="A-Version")))
    stack = app.middlewares(state)
    operation = next(m for m in stack if getattr(m, "func", None) is OperationMiddleware)
    assert operation.keywords["version_headers"] == ("Service-Version", "a-version")


def test_check_version_unit():
    names = (b"service-version", b"a-version")
    parameters.check_version([(b"a-version", b"2")], names)
    parameters.check_version([(b"service-version", b" 2 ")], names)
    with pytest.raises(Exception, match="b-version"):
        parameters.check_version([(b"b-version", b"2")], names)
