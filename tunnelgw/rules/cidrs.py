"""IP networks: the canonical form of a CIDR, whether a set of allow and deny rules admits an
address (the most specific rule wins, deny over allow at the same prefix length), and the
client address behind trusted proxies."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Sequence

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Address = ipaddress.IPv4Address | ipaddress.IPv6Address


class CidrError(ValueError):
    """Not an IPv4 or IPv6 address or CIDR network."""


def network(text: str) -> Network:
    """The network of `text` (`10.0.0.0/8`, `2001:db8::/32`; an address alone is that one
    address), host bits cleared; raises CidrError."""
    value = text.strip()
    if not value or value != text or "%" in value:  # no padding, no IPv6 zone
        raise CidrError(f"{text[:64]!r} is not an IPv4 or IPv6 address or CIDR network.")
    try:
        found = ipaddress.ip_network(value, strict=False)
    except ValueError:
        raise CidrError(
            f"{text[:64]!r} is not an IPv4 or IPv6 address or CIDR network "
            "(e.g. 203.0.113.0/24, 2001:db8::/32, 198.51.100.7)."
        ) from None
    return found


def canonical(text: str) -> str:
    """`text` as a network in canonical form (`10.1.2.3/8` -> `10.0.0.0/8`, `10.0.0.1` ->
    `10.0.0.1/32`, IPv6 compressed); raises CidrError."""
    return str(network(text))


def address(text: str) -> Address | None:
    """The IP address `text` (an IPv4-mapped IPv6 address as IPv4), None if it is not one."""
    try:
        found = ipaddress.ip_address(text.strip())
    except ValueError:
        return None
    if isinstance(found, ipaddress.IPv6Address) and found.ipv4_mapped is not None:
        return found.ipv4_mapped
    return found


def admits(rules: Iterable[tuple[str, str]], client: Address | None) -> bool:
    """Whether the rules `(cidr, action)` admit `client`: among the rules whose network holds
    it, the one with the longest prefix decides, a `deny` winning over an `allow` of the same
    length; no such rule (or no address) is a refusal."""
    if client is None:
        return False
    best: tuple[int, bool] | None = None  # (prefix length, is deny)
    for cidr, action in rules:
        net = ipaddress.ip_network(cidr)
        if net.version != client.version or client not in net:
            continue
        key = (net.prefixlen, action == "deny")
        if best is None or key > best:
            best = key
    return best is not None and not best[1]


def networks(text: str) -> tuple[Network, ...]:
    """The comma-separated networks of a setting (e.g. the trusted proxies); raises CidrError."""
    return tuple(network(part.strip()) for part in text.split(",") if part.strip())


def client_address(
    peer: str | None, forwarded_for: Sequence[str], trusted: Sequence[Network]
) -> Address | None:
    """The client's address: the peer's, unless the peer is a trusted proxy; then the
    right-most address of `X-Forwarded-For` (all its headers, in order) that is not a trusted
    proxy, so a client cannot choose it by sending the header itself."""
    found = address(peer) if peer else None
    if found is None or not _trusted(found, trusted):
        return found
    hops = [hop.strip() for header in forwarded_for for hop in header.split(",")]
    for hop in reversed(hops):
        candidate = address(hop)
        if candidate is None:
            return None  # a hop that is not an address: nothing left to trust
        if not _trusted(candidate, trusted):
            return candidate
    return found


def _trusted(found: Address, trusted: Sequence[Network]) -> bool:
    return any(found.version == net.version and found in net for net in trusted)
