"""tunnelgw.rules.endpoint_urls: URL normal forms, bindings and the reserved domain names a
host matches (the rules' API faults: tests/api/test_cloud_endpoints.py)."""

from __future__ import annotations

import pytest

from tunnelgw.core.errors import ApiError, Code
from tunnelgw.rules import endpoint_urls


@pytest.mark.parametrize(
    ("url", "bindings", "normal", "port", "binding", "needs"),
    [
        ("app.example.com", None, "https://app.example.com", 443, "public", "domain"),
        ("HTTP://App.Example.com:80/", None, "http://app.example.com", 80, "public", "domain"),
        ("tls://a.example.com", [], "tls://a.example.com", 443, "public", "domain"),
        (
            "tcp://1.tcp.example.com:20001",
            None,
            "tcp://1.tcp.example.com:20001",
            20001,
            "public",
            "addr",
        ),
        (
            "https://api.internal:8443",
            None,
            "https://api.internal:8443",
            8443,
            "internal",
            "nothing",
        ),
        ("http://svc.ns", ["kubernetes"], "http://svc.ns", 80, "kubernetes", "nothing"),
        ("tcp://db.ns:5432", ["kubernetes"], "tcp://db.ns:5432", 5432, "kubernetes", "nothing"),
        (
            "https://a.b.c.d.e.internal",
            ["internal"],
            "https://a.b.c.d.e.internal",
            443,
            "internal",
            "nothing",
        ),
    ],
)
def test_normal_forms(url, bindings, normal, port, binding, needs):
    target = endpoint_urls.check(url, bindings)
    assert (target.url, target.port, target.binding, target.needs) == (normal, port, binding, needs)
    assert target.hostport == f"{target.host}:{port}"


@pytest.mark.parametrize(
    ("url", "code"),
    [
        ("https://", Code.ENDPOINT_URL_INVALID),
        ("https://-a.example.com", Code.ENDPOINT_URL_INVALID),
        ("https://a.example.com?x=1", Code.ENDPOINT_URL_INVALID),
        ("https://a.example.com#x", Code.ENDPOINT_URL_INVALID),
        ("https://[::1]:443", Code.ENDPOINT_URL_INVALID),
        ("https://a.example.com:0", Code.ENDPOINT_PORT_INVALID),
        ("https://internal", Code.ENDPOINT_INTERNAL_HOST_REQUIRED),
    ],
)
def test_faults(url, code):
    with pytest.raises(ApiError) as caught:
        endpoint_urls.check(url, None)
    assert caught.value.code is code
    assert caught.value.details == {"field": "url"}


def test_internal_names_need_the_internal_binding():
    with pytest.raises(ApiError) as caught:
        endpoint_urls.check("http://svc.internal", ["kubernetes"])
    assert caught.value.code is Code.ENDPOINT_INTERNAL_BINDING_REQUIRED


def test_domain_candidates():
    assert endpoint_urls.domain_candidates("a.b.example.com") == [
        "a.b.example.com",
        "*.b.example.com",
        "*.example.com",
        "*.com",
    ]
    assert endpoint_urls.domain_candidates("*.example.com") == ["*.example.com", "*.com"]
