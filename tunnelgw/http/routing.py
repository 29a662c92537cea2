"""Connexion's routing with an index in front of Starlette's linear route scan.

Connexion's RoutingMiddleware tries every route of the spec in turn (a regular expression
each) and Connexion's SwaggerUIMiddleware scans its own routes before that, for every request.
`RoutingMiddleware` here is Connexion's, with the routes it built indexed by method and number
of path segments: a request that names a spec operation goes straight to it, annotated exactly
as Connexion's router annotates it (path parameters, operationId); anything else (an unknown
path, a wrong method, a trailing slash) takes Connexion's own router, which answers 404/405 as
before. `SwaggerUIMiddleware` lets requests outside the docs paths through without routing and
serves the spec itself (tunnelgw.http.published) instead of Connexion's resolved copy.
Neither redirects a path with or without a trailing slash to the other (Starlette would, with a
`Location` built from the `Host` header the client sent): such a path is 404.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from connexion.middleware import routing, swagger_ui
from connexion.middleware.abstract import ROUTING_CONTEXT
from starlette.routing import Mount, Route, Router
from starlette.types import Receive, Scope, Send

from tunnelgw.http.published import SPEC_PATHS, PublishedSpec

# The docs routes SwaggerUIMiddleware serves (the spec at /openapi.json|yaml, the UI at /ui).
DOCS_PREFIXES = ("/openapi.", "/ui")


@dataclass(frozen=True)
class _Entry:
    literals: tuple[tuple[int, str], ...]  # (segment index, text) that must match
    params: tuple[tuple[int, str], ...]  # (segment index, parameter name)
    operation_id: str


class RoutingMiddleware(routing.RoutingMiddleware):  # type: ignore[misc]
    """Connexion's RoutingMiddleware with an index of its routes (see the module docstring)."""

    def __init__(self, app: Any) -> None:
        super().__init__(app)
        self._index: dict[tuple[str, int], list[_Entry]] = {}

    def add_api(self, *args: Any, **kwargs: Any) -> None:
        super().add_api(*args, **kwargs)
        no_slash_redirects(self.router)
        self._index = {}
        for mount in self.router.routes:
            if isinstance(mount, Mount) and mount.path == "":
                for route in mount.routes:
                    if isinstance(route, Route):
                        self._add(route)

    def _add(self, route: Route) -> None:
        operation_id = getattr(route.app, "operation_id", None)
        if operation_id is None or any(c.regex != "[^/]+" for c in route.param_convertors.values()):
            return  # left to Connexion's router
        segments = route.path.split("/")
        literals, params = [], []
        for position, segment in enumerate(segments):
            if segment.startswith("{") and segment.endswith("}"):
                params.append((position, segment[1:-1].partition(":")[0]))
            else:
                literals.append((position, segment))
        entry = _Entry(tuple(literals), tuple(params), operation_id)
        for method in route.methods or ():
            self._index.setdefault((method, len(segments)), []).append(entry)

    def _find(self, method: str, path: str) -> tuple[_Entry, list[str]] | None:
        segments = path.split("/")
        for entry in self._index.get((method, len(segments)), ()):
            if all(segments[i] == text for i, text in entry.literals) and all(
                segments[i] for i, _ in entry.params
            ):
                return entry, segments
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        found = None
        if scope["type"] == "http" and not scope.get("root_path"):
            found = self._find(scope["method"], scope["path"])
        if found is None:
            await super().__call__(scope, receive, send)
            return
        entry, segments = found
        path_params = scope.setdefault("path_params", {})
        for position, name in entry.params:
            path_params[name] = segments[position]
        extensions = scope.setdefault("extensions", {})
        extensions.setdefault(ROUTING_CONTEXT, {}).update(
            {"api_base_path": "", "operation_id": entry.operation_id}
        )
        await self.app(scope, receive, send)


class SwaggerUIMiddleware(swagger_ui.SwaggerUIMiddleware):  # type: ignore[misc]
    """The spec's GET and HEAD (`published`), Connexion's Swagger UI; other requests pass
    straight through. Connexion's routes are built at the first request for them: its Swagger
    UI renders its page with Jinja2, which a worker that never serves the docs does not load
    (`workarounds.defer_unused` defers it)."""

    def __init__(self, app: Any, *, published: PublishedSpec) -> None:
        super().__init__(app)
        self._pending: list[tuple[tuple[Any, ...], dict[str, Any]]] = []
        self.published = published

    def add_api(self, *args: Any, **kwargs: Any) -> None:
        self._pending.append((args, kwargs))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith(DOCS_PREFIXES):
            await self.app(scope, receive, send)
            return
        if scope["path"] in SPEC_PATHS and scope["method"] in ("GET", "HEAD"):
            await self.published(scope, receive, send)
            return
        while self._pending:
            args, kwargs = self._pending.pop(0)
            super().add_api(*args, **kwargs)
            no_slash_redirects(self.router)
        await super().__call__(scope, receive, send)


def no_slash_redirects(router: Router) -> None:
    """Turn off Starlette's trailing-slash redirects in `router` and the routers mounted in it."""
    router.redirect_slashes = False
    for route in router.routes:
        if isinstance(route, Mount) and isinstance(route.app, Router):
            no_slash_redirects(route.app)
