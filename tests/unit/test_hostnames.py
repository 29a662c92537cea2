"""The hostname rules of tunnelgw.rules.hostnames are the spec's ReservedHostname and
IngressHostname schemas (requests are validated by the spec; fixtures by the module)."""

from __future__ import annotations

import pytest

from tunnelgw.core.spec import load as load_spec
from tunnelgw.rules import hostnames

SCHEMAS = load_spec()["components"]["schemas"]


@pytest.mark.parametrize(
    ("schema", "pattern"),
    [("ReservedHostname", hostnames.RESERVED), ("IngressHostname", hostnames.INGRESS)],
)
def test_spec_patterns_are_the_modules(schema, pattern):
    assert SCHEMAS[schema]["pattern"] == f"^{pattern.pattern}$"
    assert SCHEMAS[schema]["maxLength"] == hostnames.MAX_LENGTH


@pytest.mark.parametrize(
    ("name", "principal"),
    [
        ("Build-7.Example.COM", "build-7.example.com"),
        ("db1", "db1"),
        ("*.hosts.example.com", "*.hosts.example.com"),
        ("10.2.42.9", "10.2.42.9"),
        ("2001:DB8:0::1", "2001:db8::1"),
        ("fe80::1%eth0", None),  # a zone means nothing on another machine
        ("10.2.42", None),  # all-digit labels: a malformed IPv4 address, not a name
        ("999", None),
        ("*", None),
        ("a.*.example", None),
        ("-a.example", None),
        ("a_b.example", None),
        ("a" * 64 + ".example", None),
        ("a." * 127 + "example", None),  # 255 characters
    ],
)
def test_ssh_host_principals(name, principal):
    assert hostnames.ssh_host_principal(name) == principal


@pytest.mark.parametrize(
    ("url", "host"),
    [
        ("https://Login.Example.com/x?y=1#z", "login.example.com"),
        ("HTTP://a.example:8080", "a.example"),
        ("tcp://1.tcp.tunnelgw.test:20002", "1.tcp.tunnelgw.test"),
        ("tls://[2001:db8::1]:443", "2001:db8::1"),
        ("http://user:secret@a.example/", "a.example"),
        ("ftp://a.example/", None),
        ("a.example/path", None),
        ("https:///path", None),
        ("https://a.example:65536/", None),
        ("https://a.example:port/", None),
        ("https://*.example.com/", None),
        ("https://a.example/\tx", None),  # urlsplit would drop the tab silently
        ("https://a example/", None),
        ("https://[::1/", None),
    ],
)
def test_url_hostnames(url, host):
    assert hostnames.url_hostname(url) == host
