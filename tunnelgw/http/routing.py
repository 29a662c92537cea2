"""Connexion's routing with an index in front of Starlette's linear route scan.

Connexion's RoutingMiddleware tries every route of the spec in turn (a regular expression
each) and Connexion's SwaggerUIMiddleware scans its own routes before that, for every request.
`RoutingMiddleware` here keeps an index of the spec's operations by method and number of path
segments, made from the spec itself: a request that names a spec operation goes straight to
it, annotated exactly as Connexion's router annotates it (path parameters, operationId);
anything else (an unknown path, a wrong method, a trailing slash) takes Connexion's own router,
which answers 404/405 as before and is built at the first such request (building its routes,
an operation object and a regular expression per operation, was ~8 ms of every start).
`SwaggerUIMiddleware` lets requests outside the docs paths through without routing and
serves the spec itself (tunnelgw.http.published) instead of Connexion's resolved copy.
Neither redirects a path with or without a trailing slash to the other (Starlette would, with a
`Location` built from the `Host` header the client sent): such a path is 404.

`Unrouted` stands in for Connexion's innermost app, which would build a third set of the
spec's operations (resolving each handler again) that nothing calls: `OperationMiddleware`
(tunnelgw.http.pipeline) serves every routed operation, and what reaches the innermost app is
what no operation matched.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from connexion.apps.asynchronous import AsyncASGIApp
from connexion.frameworks.starlette import PATH_PARAMETER_CONVERTERS, starlettify_path
from connexion.http_facts import METHODS
from connexion.middleware import routing, swagger_ui
from connexion.middleware.abstract import ROUTING_CONTEXT
from starlette.routing import Mount, Router
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
    """Connexion's RoutingMiddleware with an index of the spec's operations (see the module
    docstring)."""

    def __init__(self, app: Any) -> None:
        super().__init__(app)
        self._index: dict[tuple[str, int], list[_Entry]] = {}
        self._pending: list[tuple[Any, dict[str, Any]]] = []

    def add_api(self, specification: Any, **kwargs: Any) -> None:
        self._pending.append((specification, kwargs))
        base_path = kwargs.get("base_path")
        if (specification.base_path if base_path is None else base_path) != "":
            return  # left to Connexion's router
        resolver = kwargs["resolver"]
        for path, item in specification.get("paths", {}).items():
            for method, operation in item.items():
                if method in METHODS:
                    self._add(path, method, operation, item.get("parameters", []), resolver)

    def _add(
        self, path: str, method: str, operation: Any, shared: list[Any], resolver: Any
    ) -> None:
        """Index one operation as Connexion's router would route it: its path as Connexion
        writes it for Starlette, and the operation id its resolver gives."""
        parameters = {(p["name"], p["in"]): p for p in (*shared, *operation.get("parameters", ()))}
        types = {
            name: _path_type(parameter["schema"])
            for (name, where), parameter in parameters.items()
            if where == "path"
        }
        if any(PATH_PARAMETER_CONVERTERS.get(kind) for kind in types.values()):
            return  # a typed parameter: left to Connexion's router and its convertors
        operation_id = resolved_id(resolver, operation)
        segments = starlettify_path(path, types).split("/")
        literals, params = [], []
        for position, segment in enumerate(segments):
            if segment.startswith("{") and segment.endswith("}"):
                params.append((position, segment[1:-1]))
            else:
                literals.append((position, segment))
        entry = _Entry(tuple(literals), tuple(params), operation_id)
        # Starlette routes a GET route's HEAD too.
        for verb in ("GET", "HEAD") if method == "get" else (method.upper(),):
            self._index.setdefault((verb, len(segments)), []).append(entry)

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
            while self._pending and scope["type"] != "lifespan":  # built at its first request
                specification, kwargs = self._pending.pop(0)
                super().add_api(specification, **kwargs)
                no_slash_redirects(self.router)
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


def resolved_id(resolver: Any, operation: dict[str, Any]) -> str:
    """The id Connexion's `resolver` gives the spec operation `operation` (its operationId
    under the handlers' package): what routing names and the pipeline serves."""
    found: str = resolver.resolve_operation_id(
        SimpleNamespace(
            operation_id=operation.get("operationId"),
            router_controller=operation.get("x-openapi-router-controller"),
        )
    )
    return found


def _path_type(schema: dict[str, Any]) -> Any:
    """A path parameter's type as Connexion reads it (`get_path_parameter_types`)."""
    if schema.get("type") == "string" and schema.get("format") == "path":
        return "path"
    return schema.get("type")


class Unrouted(AsyncASGIApp):  # type: ignore[misc]
    """Connexion's innermost app without the spec's operations (see the module docstring):
    what reaches it matched none, and its empty router answers 404."""

    def add_api(self, *args: Any, **kwargs: Any) -> None:
        return None


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
