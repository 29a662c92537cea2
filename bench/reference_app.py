"""Reference servers for the benchmark: what the same stack does with nothing on top.

- `create_app`: bare Starlette on uvicorn with stdlib `sqlite3`, doing per request what
  tunnelgw's GET by id does in the database: the bearer-token lookup (api_key joined to its
  principal by the SHA-256 of the token) and the row read (by id and account), both inline on
  the event loop on one read connection per process (WAL, tunnelgw/storage/db.py's pragmas,
  autocommit, `query_only`), then the row's API shape serialised with orjson. It checks the
  `Service-Version` header, and answers 401/404 as tunnelgw would; no Connexion, no request or
  response validation, no middleware. This is the ceiling of the stack.
- `create_constant_app`: bare Starlette answering the same path with constant JSON (the HTTP
  layer alone).

Run by bench/run.py:
    BENCH_REFERENCE_DB=/path/to/tunnelgw.storage.db uvicorn --app-dir bench --factory \
        reference_app:create_app
The database must already hold the project's schema and rows (run.py prepares it).
"""

from __future__ import annotations

import hashlib
import hmac
import os
import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import orjson
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from tunnelgw.storage.connections import SQLITE_PRAGMAS

DB_ENV = "BENCH_REFERENCE_DB"
PATH = "/backends/http_response"
TOKEN_SQL = (
    'SELECT "api_key"."token_hash", "api_key"."id", "principal"."id", '
    '"principal"."account_id", "principal"."is_admin" FROM "api_key" '
    'JOIN "principal" ON "principal"."id" = "api_key"."owner_id" '
    'WHERE "api_key"."token_hash" = ?'
)
ROW_SQL = (
    'SELECT "id", "account_id", "created_at", "description", "metadata", "body", "headers", '
    '"status_code" FROM "http_response_backend" WHERE "id" = ? AND "account_id" = ?'
)
CONSTANT = orjson.dumps(
    {
        "id": "bkdhr_2pQcF3kWz9nLdUy5MhZ2oJlSc0B",
        "uri": "http://127.0.0.1:8080/backends/http_response/bkdhr_2pQcF3kWz9nLdUy5MhZ2oJlSc0B",
        "created_at": "2026-11-21T10:11:14Z",
        "description": "bench",
        "metadata": "",
        "body": "hello",
        "headers": {"content-type": "text/plain"},
        "status_code": 200,
    }
)


def connect(path: str) -> sqlite3.Connection:
    """A read connection configured as tunnelgw/storage/db.py configures its own."""
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    for pragma in SQLITE_PRAGMAS:
        conn.execute(f"PRAGMA {pragma}")
    conn.execute("PRAGMA query_only=ON")
    return conn


def _json(data: Any, status_code: int = 200) -> Response:
    return Response(orjson.dumps(data), status_code=status_code, media_type="application/json")


def _error(status_code: int, code: str) -> Response:
    return _json({"error_code": code, "status_code": status_code}, status_code)


def to_api(row: tuple[Any, ...], host: str) -> dict[str, Any]:
    """The API shape of an http_response_backend row, as tunnelgw renders it."""
    id_, _account, created, description, meta, body, headers, status = row
    return {
        "id": id_,
        "uri": f"http://{host}{PATH}/{id_}",
        "created_at": f"{created[:10]}T{created[11:19]}Z",
        "description": description,
        "metadata": meta,
        "body": body,
        "headers": orjson.loads(headers) if headers else None,
        "status_code": status,
    }


def create_app() -> Starlette:
    """The bare reference (a factory: each uvicorn worker opens its own connection)."""
    state: dict[str, sqlite3.Connection] = {}

    async def get_backend(request: Request) -> Response:
        headers = request.headers
        if headers.get("service-version") != "2":
            return _error(400, "ERR_VERSION_UNSUPPORTED")
        scheme, _, token = headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not token:
            return _error(401, "ERR_AUTHENTICATION_REQUIRED")
        digest = hashlib.sha256(token.encode()).hexdigest()
        conn = state["conn"]
        key = conn.execute(TOKEN_SQL, (digest,)).fetchone()
        if key is None or not hmac.compare_digest(key[0], digest):
            return _error(401, "ERR_INVALID_CREDENTIALS")
        row = conn.execute(ROW_SQL, (request.path_params["id"], key[3])).fetchone()
        if row is None:
            return _error(404, "ERR_NOT_FOUND")
        return _json(to_api(row, headers.get("host", "")))

    async def healthz(_request: Request) -> Response:
        return _json({"status": "ok"})

    @asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        state["conn"] = connect(os.environ[DB_ENV])
        yield
        state.pop("conn").close()

    routes = [Route("/healthz", healthz), Route(PATH + "/{id}", get_backend)]
    return Starlette(routes=routes, lifespan=lifespan)


def create_constant_app() -> Starlette:
    """Constant JSON on the same path: the HTTP layer alone."""

    async def constant(_request: Request) -> Response:
        return Response(CONSTANT, media_type="application/json")

    async def healthz(_request: Request) -> Response:
        return _json({"status": "ok"})

    routes = [Route("/healthz", healthz), Route(PATH + "/{id}", constant)]
    return Starlette(routes=routes)
