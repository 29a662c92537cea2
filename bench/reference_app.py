"""Reference server for the benchmark: bare Starlette on the same database stack as tunnelgw.

No Connexion, no authentication, no request or response validation: one route that reads
one `http_response_backend` row with async SQLAlchemy + aiosqlite and returns the row's
API shape (`to_api()`, serialised with orjson as the project does). The SQLite connections
are configured like `tunnelgw/db.py` does (same pragmas, explicit BEGIN), so the gap between
this server and tunnelgw is the framework, auth and validation, not the database.

Run by bench/run.py:
    BENCH_REFERENCE_DB=/path/to.db uvicorn --app-dir bench --factory reference_app:create_app
The database must already hold the schema and rows (run.py seeds it).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import orjson
from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine, async_sessionmaker, create_async_engine
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from models import HttpResponseBackend

DB_ENV = "BENCH_REFERENCE_DB"
PRAGMAS = ("journal_mode=WAL", "busy_timeout=5000", "synchronous=NORMAL", "foreign_keys=ON")


def configure_sqlite(engine: AsyncEngine) -> None:
    """Per-connection pragmas and an explicit BEGIN, as tunnelgw/db.py does."""

    @event.listens_for(engine.sync_engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        for pragma in PRAGMAS:
            cursor.execute(f"PRAGMA {pragma}")
        cursor.close()

    @event.listens_for(engine.sync_engine, "begin")
    def _on_begin(conn: Any) -> None:
        conn.exec_driver_sql("BEGIN")


def _json(data: Any, status_code: int = 200) -> Response:
    return Response(orjson.dumps(data), status_code=status_code, media_type="application/json")


def create_app() -> Starlette:
    """The ASGI app (a factory, so each uvicorn worker opens its own engine)."""
    engine = create_async_engine(f"sqlite+aiosqlite:///{os.environ[DB_ENV]}")
    configure_sqlite(engine)
    sessions = async_sessionmaker(engine, expire_on_commit=False, autoflush=False)

    async def get_backend(request: Request) -> Response:
        async with sessions() as session:
            row = await session.get(HttpResponseBackend, request.path_params["id"])
        if row is None:
            return _json({"message": "not found"}, 404)
        return _json(row.to_api())

    async def healthz(_request: Request) -> Response:
        return _json({"status": "ok"})

    @asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        yield
        await engine.dispose()

    routes = [
        Route("/healthz", healthz),
        Route("/backends/http_response/{id}", get_backend),
    ]
    return Starlette(routes=routes, lifespan=lifespan)
