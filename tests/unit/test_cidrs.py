"""tunnelgw.rules.cidrs: canonical networks, the most specific rule deciding, the client address
behind trusted proxies."""

from __future__ import annotations

import ipaddress

import pytest

from tunnelgw.rules import cidrs


def test_canonical_forms():
    assert cidrs.canonical("10.1.2.3/8") == "10.0.0.0/8"
    assert cidrs.canonical("10.1.2.3") == "10.1.2.3/32"
    assert cidrs.canonical("2001:DB8::1") == "2001:db8::1/128"
    for bad in ("", " 10.0.0.0/8", "10.0.0.0/8\n", "fe80::1%eth0", "10.0.0.0/33", "a.b.c.d"):
        with pytest.raises(cidrs.CidrError):
            cidrs.canonical(bad)


@pytest.mark.parametrize(
    ("rules", "address", "admitted"),
    [
        ([("10.0.0.0/8", "allow")], "10.1.2.3", True),
        ([("10.0.0.0/8", "allow")], "11.1.2.3", False),  # no rule holds it
        ([], "10.1.2.3", False),
        ([("10.0.0.0/8", "allow"), ("10.1.0.0/16", "deny")], "10.1.2.3", False),
        ([("10.0.0.0/8", "deny"), ("10.1.2.3/32", "allow")], "10.1.2.3", True),
        ([("10.1.2.3/32", "allow"), ("10.1.2.3/32", "deny")], "10.1.2.3", False),  # tie: deny
        ([("0.0.0.0/0", "allow")], "2001:db8::1", False),  # other family
        ([("::/0", "allow")], "2001:db8::1", True),
        ([("10.0.0.0/8", "allow")], "::ffff:10.1.2.3", True),  # IPv4-mapped
    ],
)
def test_the_most_specific_rule_decides(rules, address, admitted):
    assert cidrs.admits(rules, cidrs.address(address)) is admitted


def test_an_unknown_address_is_never_admitted():
    assert cidrs.admits([("0.0.0.0/0", "allow")], None) is False
    assert cidrs.address("testclient") is None


PROXIES = cidrs.networks("127.0.0.1, 10.0.0.0/8")


@pytest.mark.parametrize(
    ("peer", "forwarded", "client"),
    [
        ("203.0.113.9", ["198.51.100.1"], "203.0.113.9"),  # not a proxy: the header is ignored
        ("127.0.0.1", [], "127.0.0.1"),
        ("127.0.0.1", ["198.51.100.1"], "198.51.100.1"),
        ("127.0.0.1", ["6.6.6.6, 198.51.100.1, 10.0.0.2"], "198.51.100.1"),
        ("127.0.0.1", ["6.6.6.6", "198.51.100.1"], "198.51.100.1"),  # several headers, in order
        ("127.0.0.1", ["10.0.0.3"], "127.0.0.1"),  # every hop a proxy: the peer
        ("127.0.0.1", ["not-an-address"], None),
        (None, [], None),
    ],
)
def test_the_client_address_behind_trusted_proxies(peer, forwarded, client):
    found = cidrs.client_address(peer, forwarded, PROXIES)
    assert found == (ipaddress.ip_address(client) if client else None)


def test_proxy_settings_are_networks():
    assert cidrs.networks("") == ()
    with pytest.raises(cidrs.CidrError):
        cidrs.networks("127.0.0.1, nope")
