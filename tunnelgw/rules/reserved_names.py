"""Which domain a reserved-domain create request reserves, and the DNS targets it gets:
pure rules over the request's `name`/`domain` and the settings (no database)."""

from __future__ import annotations

import string

from tunnelgw.core import ids
from tunnelgw.core.errors import ApiError, Code
from tunnelgw.core.settings import Settings
from tunnelgw.rules import hostnames

TARGET_ALPHABET = string.digits + string.ascii_lowercase
TARGET_LENGTH = 20


def expand(value: str, settings: Settings) -> str:
    """`value` in lower case; a name without a dot is a subdomain of the shared domain."""
    value = value.lower()
    return value if "." in value else f"{value}.{settings.shared_domain.lower()}"


def requested(name: str | None, domain: str | None, settings: Settings) -> str:
    """The domain to reserve from `name` and `domain` (`""` or None is unset); ApiError(400)
    when neither is set, when they differ, or for the shared domain itself."""
    given = {
        field: expand(value, settings)
        for field, value in (("name", name), ("domain", domain))
        if value
    }
    if not given:
        raise ApiError(
            Code.MISSING_FIELD, "Give the domain to reserve in domain (or name).", field="domain"
        )
    if len(set(given.values())) > 1:
        raise ApiError(
            Code.CONFLICTING_FIELDS,
            f"name reserves {given['name']!r} but domain {given['domain']!r}; give one of them.",
            field="name",
        )
    field, value = next(reversed(given.items()))  # domain if given, else name
    if value == settings.shared_domain.lower():
        raise ApiError(
            Code.INVALID_DOMAIN,
            f"{value!r} is the service's shared domain; reserve a subdomain of it instead.",
            field=field,
        )
    if len(value) > hostnames.MAX_LENGTH:
        raise ApiError(
            Code.INVALID_DOMAIN,
            f"{value!r} is longer than {hostnames.MAX_LENGTH} characters.",
            field=field,
        )
    return value


def is_service_subdomain(domain: str, settings: Settings) -> bool:
    return hostnames.is_under(domain, settings.shared_domain)


def random_target(suffix: str) -> str:
    """`<20 random lower-case letters and digits>.<suffix>` (repeatable in seeded mode)."""
    source = ids.random_source("dns_targets")
    label = "".join(source.choice(TARGET_ALPHABET) for _ in range(TARGET_LENGTH))
    return f"{label}.{suffix}"


def targets(domain: str, settings: Settings) -> tuple[str | None, str | None]:
    """(`cname_target`, `acme_challenge_cname_target`) of a newly reserved `domain`."""
    if is_service_subdomain(domain, settings):
        return None, None
    acme = random_target(settings.acme_challenge_suffix) if hostnames.is_wildcard(domain) else None
    return random_target(settings.cname_suffix), acme
