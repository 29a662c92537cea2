"""Hostnames of reserved domains and agent ingresses: syntax and where a name lies.

The syntax rules are the `pattern`s of `openapi.yaml` (requests are validated against them
before a handler runs); the same expressions are here for fixtures, which bypass the API.
"""

from __future__ import annotations

import re

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
