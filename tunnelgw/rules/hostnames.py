"""Hostnames of reserved domains and agent ingresses, SSH host certificate principals and
the hosts of reported URLs: syntax and where a name lies.

The syntax rules are the `pattern`s of `openapi.yaml` (requests are validated against them
before a handler runs); the same expressions are here for fixtures, which bypass the API.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Sequence
from urllib.parse import urlsplit

from tunnelgw.core.errors import ApiError, Code

_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_TOP = r"[A-Za-z](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
# A reserved domain or name: one label (a service subdomain), or a dotted name whose last
# label starts with a letter; `*` only as the whole first label of a name of 2+ more labels.
RESERVED = re.compile(rf"(?:\*\.(?:{_LABEL}\.)+{_TOP}|(?:{_LABEL}\.)*{_TOP})")
# An agent ingress domain: a dotted name of two or more labels, no wildcard.
INGRESS = re.compile(rf"(?:{_LABEL}\.)+{_TOP}")
MAX_LENGTH = 253


def matches(pattern: re.Pattern[str], name: str) -> bool:
    return len(name) <= MAX_LENGTH and pattern.fullmatch(name) is not None


def is_wildcard(name: str) -> bool:
    return name.startswith("*.")


def is_under(name: str, parent: str) -> bool:
    """Whether `name` is a proper subdomain of `parent` (case-insensitive)."""
    return name.lower().endswith("." + parent.lower())


# Agent ingresses: `<region>.<domain>` per region, in the API document's order (section 8).
REGIONS = ("au", "eu", "ap", "us", "jp", "in", "sa")
# The longest agent ingress domain (the spec's `maxLength`): `<region>.<domain>` stays
# within MAX_LENGTH.
INGRESS_MAX_LENGTH = 249


def region_domains(domain: str) -> list[str]:
    """The regional ingress names of the agent ingress `domain`, in REGIONS order."""
    return [f"{region}.{domain}" for region in REGIONS]


def is_at_or_under(name: str, parent: str) -> bool:
    """Whether `name` is `parent` or a subdomain of it (case-insensitive)."""
    return name.lower() == parent.lower() or is_under(name, parent)


# SSH host certificate principals: a host name (an optional `*.` first label, as OpenSSH
# matches host principals as patterns) or an IP address.
_HOST_NAME = re.compile(rf"(?:\*\.)?(?:{_LABEL}\.)*{_LABEL}")


def ssh_host_principal(name: str) -> str | None:
    """`name` as a host certificate states it (host names in lower case, as the SSH client
    compares them; IP addresses in their canonical form), or None when it is neither a host
    name nor an IP address."""
    if "%" in name:  # an IPv6 zone is local to one machine
        return None
    try:
        return str(ipaddress.ip_address(name))
    except ValueError:
        pass
    # All-digit labels read as a (malformed) IPv4 address, not a host name.
    if len(name) > MAX_LENGTH or not _HOST_NAME.fullmatch(name) or name.replace(".", "").isdigit():
        return None
    return name.lower()


def ssh_host_principals(names: Sequence[str]) -> list[str]:
    """The principals a host certificate states (host names lower-cased, IP addresses in
    canonical form, repeats dropped); 400 ERR_INVALID_HOST_PRINCIPAL naming the first that
    is neither a host name nor an IP address."""
    result: list[str] = []
    for index, name in enumerate(names):
        principal = ssh_host_principal(name)
        if principal is None:
            raise ApiError(
                Code.INVALID_HOST_PRINCIPAL,
                f"principals.{index}: {name[:256]!r} is neither a host name (letters, digits, "
                "inner hyphens, dot-separated; '*.' as the first label allowed) nor an IP "
                "address.",
                field=f"principals.{index}",
            )
        if principal not in result:
            result.append(principal)
    return result


# Abuse reports: the URL schemes of the platform's endpoints.
URL_SCHEMES = ("http", "https", "tcp", "tls")
_CONTROL = re.compile(r"[\x00-\x20\x7f]")


def url_hostname(url: str) -> str | None:
    """The hostname of `url` (lower case; an IP address in canonical form) when it is an
    absolute URL of one of URL_SCHEMES with a valid host and port, else None."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a port that is not 0..65535
    except ValueError:
        return None
    host = parts.hostname or ""
    # urlsplit drops tabs and newlines silently: a URL with spaces or controls is refused.
    if parts.scheme.lower() not in URL_SCHEMES or host.startswith("*") or _CONTROL.search(url):
        return None
    return ssh_host_principal(host) if host else None
