"""The application factory: Connexion AsyncApp on `openapi.yaml`, our validators, error
rendering and middlewares. The app owns its settings, database and key-encryption key (an
`AppState`, activated per request); it installs no process globals, so several apps can live
in one process. The one exception is the id generator's seed (`id_seed`), process-wide by
nature: an app applies it when it starts, unless the process already runs with that seed.
"""

from __future__ import annotations

import functools
import gc
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import orjson
from connexion import AsyncApp
from connexion.exceptions import ProblemException
from connexion.jsonifier import Jsonifier
from connexion.middleware.exceptions import ExceptionMiddleware
from connexion.middleware.lifespan import LifespanMiddleware
from connexion.middleware.server_error import ServerErrorMiddleware
from connexion.options import SwaggerUIOptions
from connexion.resolver import RelativeResolver
from starlette.exceptions import HTTPException

from tunnelgw.core import ids, platform_errors, spec
from tunnelgw.core import settings as tunnelgw_settings
from tunnelgw.core.errors import ApiError
from tunnelgw.core.settings import Settings
from tunnelgw.crypto import keys
from tunnelgw.http import logconfig, middleware, published, routing, workarounds
from tunnelgw.http.pipeline import operation as pipeline
from tunnelgw.http.pipeline.parameters import VERSION_HEADER
from tunnelgw.http.rendering import ErrorRenderer
from tunnelgw.http.state import AppState
from tunnelgw.rules import cidrs
from tunnelgw.services import quotas
from tunnelgw.storage import db

HANDLERS = pipeline.HANDLERS_PACKAGE


class _OrjsonText:
    """orjson behind the `json` module interface Connexion's Jsonifier expects."""

    @staticmethod
    def dumps(data: Any, **_: Any) -> str:
        return orjson.dumps(data).decode()

    @staticmethod
    def loads(data: str | bytes) -> Any:
        return orjson.loads(data)


def apply_settings(spec: dict[str, Any], settings: Settings) -> dict[str, Any]:
    """`spec` with the values that follow the settings: the one certificate authority a
    reserved domain's certificate management policy may name (`letsencrypt` in the file)
    becomes `settings.certificate_authority`, in the served spec and its validation."""
    schemas = spec["components"]["schemas"]
    enum = schemas["ReservedDomainCertPolicy"]["properties"]["authority"]["enum"]
    enum[:] = [settings.certificate_authority if value else value for value in enum]
    _admin_api(spec, enabled=settings.admin_api)
    if settings.profile == "platform":
        _platform_profile(spec)
    return spec


# The statuses the platform profile answers in place of tunnelgw's (no 401 or 409 from the
# platform: tunnelgw.core.platform_errors), with the response each is documented by.
_PROFILE_STATUSES = {"401": ("403", "Forbidden"), "409": ("400", "BadRequest")}


def _platform_profile(spec: dict[str, Any]) -> None:
    """The platform profile's error bodies in the served spec: `error_code` is one of
    tunnelgw's codes or one of the platform's, and absent on a plain not-found; an operation
    that answers 401 or 409 documents the platform's 403 or 400 for the same failures."""
    error = spec["components"]["schemas"]["Error"]
    codes = error["properties"]["error_code"]
    codes["enum"] = [*codes["enum"], *platform_errors.error_codes()]
    error["required"] = [name for name in error["required"] if name != "error_code"]
    for item in spec["paths"].values():
        for operation in item.values():
            responses = operation.get("responses") if isinstance(operation, dict) else None
            for status, (answered, name) in _PROFILE_STATUSES.items():
                if responses is not None and status in responses:
                    responses.setdefault(answered, {"$ref": f"#/components/responses/{name}"})


ADMIN_PREFIX = "/_admin/"
OPERATOR_SCHEME = "operatorToken"  # the account operations' credential (admin API only)
# What a fault rule can answer (AdminFaultCreate.status), documented on every operation a
# rule can name while the admin API is on.
INJECTED_RESPONSES = {
    "429": "TooManyRequests",
    "500": "InternalError",
    "503": "ServiceUnavailable",
}


def fault_operations(settings: Settings) -> frozenset[str]:
    """The operations fault rules can hit: none unless the admin API is on."""
    if not settings.admin_api:
        return frozenset()
    schema = spec.load()["components"]["schemas"]["AdminFaultCreate"]
    return frozenset(schema["properties"]["operation"]["enum"])


def _admin_api(spec: dict[str, Any], *, enabled: bool) -> None:
    """Off: the `/_admin/` paths and their tag are not served (404 ERR_ROUTE_NOT_FOUND). On:
    every operation a fault rule can name documents the statuses a rule can inject."""
    paths = spec["paths"]
    if not enabled:
        for path in [p for p in paths if p.startswith(ADMIN_PREFIX)]:
            del paths[path]
        spec["tags"] = [t for t in spec.get("tags", []) if t["name"] != "admin"]
        spec["components"]["securitySchemes"].pop(OPERATOR_SCHEME, None)
        return
    names = set(
        spec["components"]["schemas"]["AdminFaultCreate"]["properties"]["operation"]["enum"]
    )
    for item in paths.values():
        for operation in item.values():
            if isinstance(operation, dict) and operation.get("operationId") in names:
                for status, name in INJECTED_RESPONSES.items():
                    operation["responses"].setdefault(
                        status, {"$ref": f"#/components/responses/{name}"}
                    )


def create_app(settings: Settings | None = None) -> AsyncApp:
    """A ready-to-serve ASGI app with its own settings, database (connections open on first
    use) and key-encryption key (loaded when the app starts, or at first use)."""
    settings = settings or Settings()
    quotas.check_kinds(settings)
    database = db.Database(settings.resolved_database_url(), settings.database_pool_size)
    state = AppState(settings, database)

    @asynccontextmanager
    async def lifespan(_app: Any) -> AsyncIterator[None]:
        tokens = state.activate()
        # `tunnelgw serve` seeded before its bootstrap and fixture load: their ids continue.
        ids.ensure_seeded(settings.id_seed)
        # `tunnelgw serve` created the key file before the workers started.
        state.kek.get()
        logconfig.lean_records()
        # What start-up built (spec, operations, validators, modules) lives as long as the
        # process: keep it out of the collector's full passes, which otherwise stall requests.
        gc.collect()
        gc.freeze()
        try:
            yield
        finally:
            await state.database.dispose()
            state.deactivate(tokens)

    app = AsyncApp(
        __name__,
        specification_dir=spec.SPEC_DIR,
        lifespan=lifespan,
        jsonifier=Jsonifier(_OrjsonText),
        swagger_ui_options=SwaggerUIOptions(swagger_ui_path="/ui"),
        middlewares=middlewares(state),
    )
    # Connexion's innermost app without a copy of the operations (tunnelgw.http.routing).
    app._middleware_app = app.middleware.app = routing.Unrouted()
    state.app = app
    app.tunnelgw_state = state
    document = apply_settings(spec.load(), settings)
    render = ErrorRenderer(document, platform_profile=settings.profile == "platform")
    with workarounds.shipped_spec():  # Connexion's from here on (resolved in place)
        app.add_api(document, resolver=RelativeResolver(HANDLERS), validate_responses=True)
    for error in (ApiError, ProblemException, HTTPException, Exception):
        app.add_error_handler(error, render.render)
    return app


def state_of(app: Any) -> AppState:
    """The state (settings, database, KEK) of an app made by `create_app`."""
    state: AppState = app.tunnelgw_state
    return state


def install_defaults(state: AppState) -> None:
    """Make an app's settings, database and KEK the process defaults, for code that runs
    outside its requests (a test suite's factories); the app itself never does this."""
    tunnelgw_settings.use(state.settings)
    db.use(state.database)
    keys.use(state.kek.get())


def middlewares(state: AppState) -> list[Any]:
    """Connexion's middleware list: its error handling, Swagger UI, routing and lifespan, our
    request context (the app's state, operation id, access log, metrics) outside the error
    handling, and our per-operation pipeline (tunnelgw.http.pipeline) in place of Connexion's
    security, validation and context layers."""
    settings = state.settings
    return [
        ServerErrorMiddleware,
        functools.partial(
            middleware.RequestContext,
            public_url=settings.resolved_public_url(),
            state=state,
            body_timeout=settings.body_timeout_seconds,
        ),
        ExceptionMiddleware,
        functools.partial(
            routing.SwaggerUIMiddleware,
            published=published.PublishedSpec(lambda: apply_settings(spec.load(), settings)),
        ),
        routing.RoutingMiddleware,
        functools.partial(
            pipeline.OperationMiddleware,
            max_body_bytes=settings.max_body_bytes,
            version_headers=(VERSION_HEADER, *settings.version_header_alias_list()),
            fault_operations=fault_operations(settings),
            trusted_proxies=cidrs.networks(settings.trusted_proxies),
            journal_keep=settings.journal_max_entries if settings.admin_api else 0,
        ),
        LifespanMiddleware,
    ]
