"""The published API document, `/openapi.json` and `/openapi.yaml`: the source's structure
(named components and `$ref`s) with the settings applied and a `servers` entry naming the base
URL (the public URL, else the request's scheme and host). Rendered once per app off the event
loop; served with an ETag (304 on `If-None-Match`) and gzip when the client accepts it."""

from __future__ import annotations

import asyncio
import gzip
import hashlib
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import orjson
import yaml
from starlette.types import Receive, Scope, Send

from tunnelgw.core import urls

SPEC_PATHS = {"/openapi.json": "json", "/openapi.yaml": "yaml"}
MEDIA_TYPES = {"json": b"application/json", "yaml": b"text/yaml; charset=utf-8"}
# Stands in for the base URL while a form is rendered, then split out (see `Template`).
_SENTINEL = "tunnelgw-published-server-url"
# Base URLs whose renditions are kept (the public URL, or the few hosts clients use).
KEPT_RENDITIONS = 16
_COMPONENT_REF = re.compile(r"#/components/(\w+)/([^/]+)$")
# Kinds of component reached through `$ref`; security schemes are named by requirements.
_PRUNED = ("schemas", "responses", "parameters", "examples", "requestBodies", "headers")


def reachable(document: dict[str, Any]) -> dict[str, Any]:
    """`document` without the components nothing outside `components` reaches (e.g. the
    admin API's schemas once its paths are not served)."""
    components = document.get("components", {})
    seen: set[tuple[str, str]] = set()
    pending = [{k: v for k, v in document.items() if k != "components"}]
    while pending:
        for ref in _refs(pending.pop()):
            match = _COMPONENT_REF.match(ref)
            if match and (kind_name := (match[1], match[2])) not in seen:
                seen.add(kind_name)
                pending.append(components.get(match[1], {}).get(match[2], {}))
    for kind in _PRUNED:
        if kind in components:
            components[kind] = {n: v for n, v in components[kind].items() if (kind, n) in seen}
    return document


def _refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                yield value
            else:
                yield from _refs(value)
    elif isinstance(node, list):
        for item in node:
            yield from _refs(item)


_Dumper: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)  # libyaml's emitter when built


class _YamlDumper(_Dumper):  # type: ignore[misc]
    """Multi-line strings (descriptions) as literal blocks, as a person writes them."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_YamlDumper.add_representer(str, _str)


def render(document: dict[str, Any], form: str) -> bytes:
    """`document` as JSON or YAML."""
    if form == "json":
        return orjson.dumps(document)
    text = yaml.dump(document, Dumper=_YamlDumper, sort_keys=False, allow_unicode=True, width=100)
    return text.encode()


@dataclass(frozen=True)
class Template:
    """One form rendered with the base URL left out: `head + <quoted URL> + tail`. A JSON
    string is also a YAML double-quoted scalar, so both forms quote the URL alike."""

    head: bytes
    tail: bytes

    @classmethod
    def of(cls, document: dict[str, Any], form: str) -> Template:
        text = render(document, form)
        placeholder = orjson.dumps(_SENTINEL) if form == "json" else _SENTINEL.encode()
        head, found, tail = text.partition(placeholder)
        assert found, "the document names its server"
        assert placeholder not in tail, "the server's URL appears once"
        return cls(head, tail)

    def fill(self, base_url: str) -> bytes:
        return self.head + orjson.dumps(base_url) + self.tail


@dataclass(frozen=True)
class Rendition:
    """One form for one base URL: its bytes, gzipped, and their ETags."""

    body: bytes
    gzipped: bytes
    etag: bytes
    gzip_etag: bytes

    @classmethod
    def of(cls, body: bytes) -> Rendition:
        digest = hashlib.sha256(body).hexdigest()[:32]
        gzipped = gzip.compress(body, compresslevel=6, mtime=0)
        return cls(body, gzipped, f'"{digest}"'.encode(), f'"{digest}-gzip"'.encode())


class PublishedSpec:
    """The `/openapi.json` and `/openapi.yaml` endpoint of one app (an ASGI app for them).

    `document` gives the document as served (settings applied); it is called once, at the
    first request for either form, in a worker thread like every rendering."""

    def __init__(self, document: Callable[[], dict[str, Any]]) -> None:
        self._document = document
        self._templates: dict[str, Template] | None = None
        self._renditions: OrderedDict[tuple[str, str], Rendition] = OrderedDict()
        self._lock = threading.Lock()  # taken in worker threads only, never on the loop

    async def rendition(self, form: str, base_url: str) -> Rendition:
        """`form` for `base_url`, rendered in a worker thread the first time."""
        found = self._renditions.get((form, base_url))
        if found is None:
            found = await asyncio.to_thread(self._render, form, base_url)
        return found

    def _render(self, form: str, base_url: str) -> Rendition:
        with self._lock:
            found = self._renditions.get((form, base_url))
            if found is not None:
                return found
            if self._templates is None:
                document = reachable(self._document())
                document["servers"] = [
                    {"url": _SENTINEL, "description": "The server that published this document."}
                ]
                self._templates = {form: Template.of(document, form) for form in MEDIA_TYPES}
            made = Rendition.of(self._templates[form].fill(base_url))
            self._renditions[(form, base_url)] = made
            while len(self._renditions) > KEPT_RENDITIONS:
                self._renditions.popitem(last=False)
            return made

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """GET or HEAD of a form: 200 (gzipped when accepted) or 304."""
        made = await self.rendition(SPEC_PATHS[scope["path"]], urls.base())
        headers = dict(scope["headers"])
        gzipped = accepts_gzip(headers.get(b"accept-encoding", b""))
        etag = made.gzip_etag if gzipped else made.etag
        response = [
            (b"etag", etag),
            (b"cache-control", b"no-cache"),
            (b"vary", b"Accept-Encoding"),
        ]
        if matches(headers.get(b"if-none-match"), (made.etag, made.gzip_etag)):
            await send({"type": "http.response.start", "status": 304, "headers": response})
            await send({"type": "http.response.body", "body": b""})
            return
        body = made.gzipped if gzipped else made.body
        response += [
            (b"content-type", MEDIA_TYPES[SPEC_PATHS[scope["path"]]]),
            (b"content-length", str(len(body)).encode()),
        ]
        if gzipped:
            response.append((b"content-encoding", b"gzip"))
        await send({"type": "http.response.start", "status": 200, "headers": response})
        await send(
            {"type": "http.response.body", "body": b"" if scope["method"] == "HEAD" else body}
        )


def accepts_gzip(accept_encoding: bytes) -> bool:
    """Whether an `Accept-Encoding` value accepts gzip (by name or `*`, with q above 0)."""
    qualities: dict[str, float] = {}
    for item in accept_encoding.decode("latin-1").lower().split(","):
        coding, *params = (part.strip() for part in item.split(";"))
        quality = 1.0
        for param in params:
            name, _, value = param.partition("=")
            if name.strip() == "q":
                try:
                    quality = float(value)
                except ValueError:
                    quality = 0.0
        if coding:
            qualities[coding] = quality
    for name in ("gzip", "x-gzip", "*"):
        if name in qualities:
            return qualities[name] > 0
    return False


def matches(if_none_match: bytes | None, etags: tuple[bytes, ...]) -> bool:
    """Whether an `If-None-Match` value names one of `etags` (weakly compared) or is `*`."""
    if not if_none_match:
        return False
    for tag in if_none_match.split(b","):
        tag = tag.strip()
        if tag == b"*" or tag.removeprefix(b"W/") in etags:
            return True
    return False
