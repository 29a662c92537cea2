"""Data for the benchmark: rows seeded through the API, and databases prepared with the
project's own schema (Alembic migrations) and account code.
"""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

import httpx
import orjson
from load import Load

from tunnelgw.core import ids
from tunnelgw.migrations import migrate
from tunnelgw.models import HttpResponseBackend
from tunnelgw.services import accounts
from tunnelgw.services.accounts import Credentials
from tunnelgw.storage import db

API_PATH = "/backends/http_response"
CREATE_BODY = {
    "description": "bench",
    "body": "hello",
    "headers": {"Content-Type": "text/plain"},
    "status_code": 200,
}
CREATE_BYTES = orjson.dumps(CREATE_BODY)
LIST_PATH = f"{API_PATH}?limit=100"
ROTATING_IDS = 100  # ids the GET-by-id scenario cycles through
SEED_TIMEOUT_S = 10


def new_token() -> str:
    return "tgw_bench" + secrets.token_hex(16)


def api_headers(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}", "Service-Version": "2"}


def destination_body(n: int) -> dict[str, Any]:
    """The `n`-th event destination of the bench's subscriptions (one each)."""
    return {"target": {"datadog": {"api_key": f"bench-{n}"}}}


def subscription_body(destination_id: str) -> dict[str, Any]:
    """A subscription to the created event of the bench's resource, to one destination."""
    return {
        "sources": [{"type": "http_response_backend_created.v0"}],
        "destination_ids": [destination_id],
    }


def seed_via_api(base_url: str, token: str, rows: int) -> list[str]:
    """Create `rows` backends through the API (one request each); their ids."""
    created = []
    with httpx.Client(base_url=base_url, headers=api_headers(token), timeout=SEED_TIMEOUT_S) as c:
        for _ in range(rows):
            response = c.post(API_PATH, json=CREATE_BODY)
            if response.status_code != 201:
                raise RuntimeError(f"seeding failed: {response.status_code} {response.text}")
            created.append(response.json()["id"])
    return created


def check_answer(base_url: str, token: str, path: str) -> None:
    """One GET of `path` must be 2xx before a load run (a wrong token or header would
    otherwise measure error answers)."""
    response = httpx.get(base_url + path, headers=api_headers(token), timeout=SEED_TIMEOUT_S)
    if not response.is_success:
        raise RuntimeError(f"GET {path}: {response.status_code} {response.text[:300]}")


def rotating_paths(all_ids: list[str]) -> tuple[str, ...]:
    """~ROTATING_IDS GET-by-id paths spread evenly over the seeded ids."""
    step = max(1, len(all_ids) // ROTATING_IDS)
    return tuple(f"{API_PATH}/{id_}" for id_ in all_ids[::step][:ROTATING_IDS])


def cursor_list_paths(list_path: str, get_paths: tuple[str, ...]) -> tuple[str, ...]:
    """`list_path` once per GET path's id as `before_id`, but the lowest tenth of them: the
    ids are spread evenly over the seeded ones (`rotating_paths`), so most pages are full.
    ~90 pages taken in turn, as a client paging through a list does."""
    ids = sorted(path.rsplit("/", 1)[1] for path in get_paths)
    return tuple(f"{list_path}&before_id={id_}" for id_ in ids[len(ids) // 10 :])


def creates(token: str) -> Load:
    """The create scenario: POST of the bench body, again and again."""
    return Load((API_PATH,), token, CREATE_BYTES)


def list_pages(get_paths: tuple[str, ...], token: str) -> Load:
    """The list pages under rotating cursors (`cursor_list_paths`)."""
    return Load(cursor_list_paths(LIST_PATH, get_paths), token)


def sqlite_url(path: Path) -> str:
    return f"sqlite:///{path}"


def create_accounts(url: str, count: int) -> list[Credentials]:
    """`count` accounts, each with an admin and an admin API key, in the (migrated) database
    at `url`; their credentials (tokens included)."""

    async def work(database: db.Database) -> list[Credentials]:
        async with database.write() as unit:
            return [
                await accounts.create_account_with_admin(unit, f"bench {n}") for n in range(count)
            ]

    return db.run_with(url, work)


def prepare_reference_db(path: Path, rows: int) -> tuple[str, list[str]]:
    """A fresh SQLite file migrated to the project's schema, one account with an admin key
    and `rows` backends; the key's token and the rows' ids."""
    url = sqlite_url(path)
    migrate.upgrade(url)
    token = new_token()

    async def work(database: db.Database) -> list[str]:
        async with database.write() as unit:
            credentials = await accounts.create_account_with_admin(unit, "bench", token=token)
            made = [
                HttpResponseBackend.new(
                    id=ids.new_id(HttpResponseBackend.PREFIX),
                    account_id=credentials.account_id,
                    description="bench",
                    body="hello",
                    headers={"content-type": "text/plain"},
                    status_code=200,
                )
                for _ in range(rows)
            ]
            unit.add_all(made)
        return [row.id for row in made]

    return token, db.run_with(url, work)
