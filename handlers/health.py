"""Liveness, readiness and metrics: answered without authentication or version header."""

from __future__ import annotations

from typing import Any

from connexion.lifecycle import ConnexionResponse

from tunnelgw.core.errors import ApiError, Code
from tunnelgw.http import metrics
from tunnelgw.migrations import migrate
from tunnelgw.services import readiness


async def get() -> dict[str, str]:
    """Liveness: the process answers."""
    return {"status": "ok"}


async def ready() -> dict[str, Any]:
    """Readiness: the database answers and its schema is the newest this code knows."""
    try:
        revision = await readiness.stored_revision()
    except Exception as exc:  # any failure to reach the database means "not ready"
        raise ApiError(
            Code.SERVICE_UNAVAILABLE, f"Database unreachable: {type(exc).__name__}."
        ) from exc
    if revision != migrate.head():
        raise ApiError(
            Code.SERVICE_UNAVAILABLE,
            f"Schema at revision {revision}, expected {migrate.head()}: run `tunnelgw migrate`.",
        )
    return {"status": "ready", "schema_revision": revision}


async def metrics_text() -> ConnexionResponse:
    """Prometheus text exposition."""
    body, content_type = metrics.exposition()
    return ConnexionResponse(status_code=200, body=body, content_type=content_type)
