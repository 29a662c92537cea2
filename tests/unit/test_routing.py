"""The routing index (tunnelgw.http.routing): made from the spec, it routes every operation as
Connexion's own router does, which is built only when a request matches no operation."""

from __future__ import annotations

import pytest
from starlette.routing import Mount, Route
from starlette.testclient import TestClient

from tunnelgw.core.settings import Settings
from tunnelgw.http import routing
from tunnelgw.http.app import create_app
from tunnelgw.migrations import migrate


@pytest.fixture
def app(tmp_path):
    settings = Settings(data_dir=tmp_path, admin_api=True)  # every operation served
    migrate.upgrade(settings.resolved_database_url())
    return create_app(settings)


def _router_of(app) -> routing.RoutingMiddleware:
    return next(
        m for m in app.middleware.middleware_stack if isinstance(m, routing.RoutingMiddleware)
    )


def _connexion_index(router: routing.RoutingMiddleware) -> set[tuple[str, int, tuple, tuple, str]]:
    """The index as Connexion's routes give it (the way it was built before it came from
    the spec): each route of the mount at "" whose parameters all take a plain segment."""
    found = set()
    for mount in router.router.routes:
        if not (isinstance(mount, Mount) and mount.path == ""):
            continue
        for route in mount.routes:
            assert isinstance(route, Route)
            if any(c.regex != "[^/]+" for c in route.param_convertors.values()):
                continue
            segments = route.path.split("/")
            literals = tuple((i, s) for i, s in enumerate(segments) if not s.startswith("{"))
            params = tuple(
                (i, s[1:-1].partition(":")[0]) for i, s in enumerate(segments) if s.startswith("{")
            )
            for method in route.methods or ():
                found.add((method, len(segments), literals, params, route.app.operation_id))
    return found


def test_the_index_routes_each_operation_as_connexion_does(app):
    with TestClient(app) as client:
        assert client.get("/healthz").status_code == 200
        router = _router_of(app)
        assert router.router.routes == []  # Connexion's router not built: no request needed it
        index = {
            (method, count, entry.literals, entry.params, entry.operation_id)
            for (method, count), entries in router._index.items()
            for entry in entries
        }
        # A path no operation has: Connexion's router is built, and answers.
        assert client.get("/no/such/path").status_code == 404
        assert router.router.routes != []
    connexion = _connexion_index(router)
    assert len(index) > 250  # 172 operations, and the HEAD of each GET
    assert index == connexion


def test_head_of_a_get_operation_and_a_wrong_method(app):
    with TestClient(app) as client:
        assert client.head("/healthz").status_code == 200
        router = _router_of(app)
        assert router.router.routes == []  # routed by the index
        response = client.put("/healthz")
        assert response.status_code == 405
        assert response.json()["status_code"] == 405


def test_the_pipeline_builds_an_operation_at_its_first_request(app):
    from tunnelgw.http.pipeline.operation import OperationMiddleware

    with TestClient(app) as client:
        stack = app.middleware.middleware_stack
        (api,) = next(m for m in stack if isinstance(m, OperationMiddleware)).apis[""]
        assert len(api.operations) == 0
        assert len(api.operations.pending) > 150
        assert client.get("/healthz").status_code == 200
        assert client.get("/healthz").status_code == 200
        assert list(api.operations) == ["tunnelgw.handlers.health.get"]
        assert "tunnelgw.handlers.health.get" not in api.operations.pending
