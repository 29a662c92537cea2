"""Cloud endpoint URLs: parse a URL, settle its binding, and check the rules of that binding
(scheme, host, port) that need no database. Which reserved domain or address a public URL
matches is the caller's question (`Target.needs`)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal
from urllib.parse import urlsplit

from tunnelgw.core.errors import ApiError, Code
from tunnelgw.rules import hostnames

BINDINGS = ("public", "internal", "kubernetes")
SCHEMES = ("http", "https", "tcp", "tls")
DEFAULT_PORTS = {"http": 80, "https": 443, "tls": 443}
# A public endpoint listens on the scheme's one port (tcp: its reserved address's port).
PUBLIC_PORTS = {"http": 80, "https": 443, "tls": 443}
KUBERNETES_SCHEMES = ("http", "tcp")
INTERNAL_SUFFIX = "internal"
MAX_INTERNAL_SUBDOMAINS = 5
_LABEL = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?", re.ASCII)


@dataclass(frozen=True)
class Target:
    """A checked endpoint URL: `url` is its normal form (lower case, the scheme's default
    port left out, a tcp port always shown); `needs` says what of the account it must match:
    a reserved domain, a reserved address, or nothing (internal and kubernetes URLs)."""

    url: str
    scheme: str
    host: str
    port: int
    binding: str
    needs: Literal["domain", "addr", "nothing"]

    @property
    def hostport(self) -> str:
        return f"{self.host}:{self.port}"


def _error(code: Code, message: str, url: str = "") -> ApiError:
    return ApiError(code, message, context={"url": url[:256]}, field="url")


def split(url: str) -> tuple[str, str, int | None]:
    """(scheme, host, port or None) of `url`; a bare hostname is `https://` (as the platform's
    clients take `--url example.com`). ApiError(400 ERR_ENDPOINT_URL_INVALID) when it is not
    `scheme://host[:port]` with a scheme of SCHEMES and a hostname."""
    text = url.strip()
    if "://" not in text:
        text = f"https://{text}"
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError as exc:
        raise _error(Code.ENDPOINT_URL_INVALID, f"{url!r} is not a URL ({exc}).") from None
    scheme = parts.scheme.lower()
    if scheme not in SCHEMES:
        raise _error(
            Code.ENDPOINT_URL_INVALID,
            f"{url!r} has the scheme {scheme!r}; use http, https, tcp or tls.",
        )
    if parts.path not in ("", "/") or parts.query or parts.fragment or "@" in parts.netloc:
        raise _error(
            Code.ENDPOINT_URL_INVALID,
            f"{url!r} has more than scheme://host[:port]; leave out the path, query and user.",
        )
    host = (parts.hostname or "").rstrip(".")
    if not _valid_host(host):
        raise _error(
            Code.ENDPOINT_URL_INVALID,
            f"{url!r} has no valid hostname; give a DNS name such as app.example.com.",
        )
    if port == 0:
        raise _error(Code.ENDPOINT_PORT_INVALID, f"{url!r}: the port must be 1 to 65535.")
    return scheme, host, port


def _valid_host(host: str) -> bool:
    labels = host.split(".")
    if labels[0] == "*":
        labels = labels[1:]
    return (
        len(host) <= hostnames.MAX_LENGTH
        and bool(labels)
        and all(_LABEL.fullmatch(label) for label in labels)
    )


def binding_of(bindings: list[str] | None, host: str) -> str:
    """The endpoint's one binding: the given one, else `internal` for a `.internal` host and
    `public` for any other (the platform infers it the same way). ApiError(400
    ERR_ENDPOINT_BINDING_INVALID) for more than one binding or an unknown one."""
    if not bindings:
        return "internal" if _is_internal(host) else "public"
    if len(bindings) != 1 or bindings[0] not in BINDINGS:
        raise ApiError(
            Code.ENDPOINT_BINDING_INVALID,
            f"bindings is {bindings!r}; give exactly one of public, internal or kubernetes.",
            field="bindings",
        )
    return bindings[0]


def _is_internal(host: str) -> bool:
    return host == INTERNAL_SUFFIX or host.endswith("." + INTERNAL_SUFFIX)


def check(url: str, bindings: list[str] | None) -> Target:
    """The checked `url` with its binding: the rules of public, internal and kubernetes URLs
    (each failure a 400 with its own code, `details.field` naming url or bindings)."""
    scheme, host, port = split(url)
    host = host.lower()
    binding = binding_of(bindings, host)
    if binding == "internal":
        _check_internal(url, host)
    elif _is_internal(host):
        raise _error(
            Code.ENDPOINT_INTERNAL_BINDING_REQUIRED,
            f"{host!r} is a .internal name, which only an endpoint with the internal binding "
            'may use; set bindings to ["internal"] or pick a public name.',
        )
    if binding == "kubernetes":
        _check_kubernetes(url, scheme, host)
    if scheme == "tcp" and port is None:
        raise _error(
            Code.ENDPOINT_PORT_INVALID, f"{url!r}: a tcp URL needs a port (tcp://host:port)."
        )
    if binding == "public" and scheme in PUBLIC_PORTS and port not in (None, PUBLIC_PORTS[scheme]):
        raise _error(
            Code.ENDPOINT_PORT_INVALID,
            f"{url!r}: a public {scheme} endpoint listens on port {PUBLIC_PORTS[scheme]}; "
            "leave the port out or give that one.",
        )
    port = port or DEFAULT_PORTS[scheme]
    shown = "" if DEFAULT_PORTS.get(scheme) == port else f":{port}"
    needs: Literal["domain", "addr", "nothing"] = "nothing"
    if binding == "public":
        needs = "addr" if scheme == "tcp" else "domain"
    return Target(f"{scheme}://{host}{shown}", scheme, host, port, binding, needs)


def _check_internal(url: str, host: str) -> None:
    if not _is_internal(host) or host == INTERNAL_SUFFIX:
        raise _error(
            Code.ENDPOINT_INTERNAL_HOST_REQUIRED,
            f"{url!r}: an endpoint with the internal binding needs a hostname ending in "
            ".internal (e.g. https://api.internal).",
            url,
        )
    names = host.removeprefix("*.").split(".")[:-1]
    if len(names) > MAX_INTERNAL_SUBDOMAINS:
        raise _error(
            Code.ENDPOINT_INTERNAL_HOST_REQUIRED,
            f"{url!r}: a .internal hostname has at most {MAX_INTERNAL_SUBDOMAINS} labels "
            "before .internal.",
            url,
        )


def _check_kubernetes(url: str, scheme: str, host: str) -> None:
    if scheme not in KUBERNETES_SCHEMES:
        raise _error(
            Code.ENDPOINT_KUBERNETES_URL_INVALID,
            f"{url!r}: a kubernetes-bound endpoint is http or tcp, not {scheme}.",
        )
    if hostnames.is_wildcard(host) or host.count(".") != 1:
        raise _error(
            Code.ENDPOINT_KUBERNETES_URL_INVALID,
            f"{url!r}: a kubernetes-bound endpoint's host is service.namespace (two labels, "
            "no wildcard).",
        )


def domain_candidates(host: str) -> list[str]:
    """The reserved domain names that `host` matches: itself, and each wildcard `*.D` with
    `host` (or, for a wildcard host, its base) a proper subdomain of D."""
    base = host.removeprefix("*.")
    labels = base.split(".")
    wildcards = [f"*.{'.'.join(labels[i:])}" for i in range(1, len(labels))]
    return [host, *wildcards]
