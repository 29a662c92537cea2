"""The request journal (the admin API's `/_admin/requests`): each API request of an account,
recorded with its secret body fields redacted; an account's newest entries are kept, up to a
bound.

A request's entry is committed before its response is sent, so a test that reads the journal
after an answer finds the request in it, whichever worker served either. Entries are written
in batches (`Journal`): one transaction for the entries of every request that finished while
the previous batch was being written, so the cost per request is a row of an `executemany`.
"""

from __future__ import annotations

import asyncio
import collections
import contextvars
import logging
import weakref
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import orjson
from sqlalchemy import and_, delete, func, select
from sqlmodel import col

from tunnelgw import models
from tunnelgw.services.bounds import Bound
from tunnelgw.storage import db
from tunnelgw.storage.db import Database

log = logging.getLogger("tunnelgw.journal")

REDACTED = "<redacted>"
# The end of a PEM private key's BEGIN line (PKCS #8, PKCS #1, SEC1, OpenSSH, encrypted).
PEM_PRIVATE_KEY_TEXT = "PRIVATE KEY-----"
PEM_PRIVATE_KEY = PEM_PRIVATE_KEY_TEXT.encode()
# Bodies larger than this are counted (`body_bytes`) but not kept.
MAX_BODY_BYTES = 64 * 1024
COLUMNS = (
    "account_id",
    "at",
    "request_id",
    "method",
    "path",
    "query",
    "operation",
    "status",
    "error_code",
    "principal_id",
    "api_key_id",
    "access_token_id",
    "scope",
    "duration_ms",
    "body_bytes",
    "body",
)

# --- what a request body may not show ------------------------------------------------------

Path = tuple[str, ...]
ANY = "*"  # an item of an array, or a value of a map


def secret_paths(schema: Mapping[str, Any] | None) -> frozenset[Path]:
    """The paths of the fields of a (resolved) body schema that are secrets: marked
    `x-secret: true` or `writeOnly: true`, in any branch of `allOf`/`anyOf`/`oneOf`."""
    found: set[Path] = set()
    if schema:
        _walk(schema, (), found, depth=0)
    return frozenset(found)


def _walk(schema: Mapping[str, Any], path: Path, found: set[Path], depth: int) -> None:
    if depth > 32:  # a recursive schema: deep enough for any body this API takes
        return
    if path and (schema.get("x-secret") or schema.get("writeOnly")):
        found.add(path)
        return
    for key in ("allOf", "anyOf", "oneOf"):
        for branch in schema.get(key, ()):
            _walk(branch, path, found, depth + 1)
    for name, prop in schema.get("properties", {}).items():
        _walk(prop, (*path, name), found, depth + 1)
    for key in ("items", "additionalProperties"):
        nested = schema.get(key)
        if isinstance(nested, Mapping):
            _walk(nested, (*path, ANY), found, depth + 1)


def redact(value: Any, paths: Iterable[Path]) -> Any:
    """`value` with the fields at `paths` replaced by `REDACTED` (a copy where it changes)."""
    for path in paths:
        value = _redact(value, path)
    return value


def _redact(value: Any, path: Path) -> Any:
    if not path:
        return REDACTED if value is not None else None
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        keys = value.keys() if head == ANY else (head,) if head in value else ()
        if not keys:
            return value
        return {k: _redact(v, rest) if k in keys else v for k, v in value.items()}
    if isinstance(value, list) and head == ANY:
        return [_redact(item, rest) for item in value]
    return value


def body_of(raw: bytes, secrets: Iterable[Path]) -> Any:
    """What the journal keeps of a request body: its JSON with the `secrets` redacted, and
    any string holding a PEM private key wherever it is; None for no body, one that is not
    JSON, or one over `MAX_BODY_BYTES`."""
    if not raw or len(raw) > MAX_BODY_BYTES:
        return None
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    if PEM_PRIVATE_KEY in raw:
        # A private key sent in the wrong field (refused, as `ca_pem` refuses one) is still a
        # private key: it never reaches the database in the clear.
        value = _without_private_keys(value)
    return redact(value, secrets)


def _without_private_keys(value: Any) -> Any:
    if isinstance(value, str):
        return REDACTED if PEM_PRIVATE_KEY_TEXT in value else value
    if isinstance(value, dict):
        return {key: _without_private_keys(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_without_private_keys(item) for item in value]
    return value


# --- writing: batches committed before the responses go -----------------------------------


class Journal:
    """The batch writer of one database in this process. `record` queues an entry and gives
    the future its request awaits: done once the entry is committed (or, should the write fail,
    logged as lost: a request is never failed for its journal entry). An account keeps its
    newest `keep` entries (`BOUND`)."""

    def __init__(self, database: Database, keep: int) -> None:
        self.database = database
        self.keep = keep
        self._pending: list[tuple[Any, ...]] = []
        self._waiters: list[asyncio.Future[None]] = []
        self._task: asyncio.Task[None] | None = None

    def record(self, values: tuple[Any, ...]) -> asyncio.Future[None]:
        """Queue the entry of the columns `COLUMNS`; the future is done once it is written.
        A plain function, not a coroutine: the request awaits the future itself, one level
        less to suspend and resume. Cancelling the future (the request was) drops nothing."""
        loop = asyncio.get_running_loop()
        done = loop.create_future()
        self._pending.append(values)
        self._waiters.append(done)
        if self._task is None or self._task.done():
            # A context of its own: the request's (its database connection above all) ends
            # with the request, and the writer outlives it.
            self._task = loop.create_task(self._run(), context=contextvars.Context())
        return done

    async def _run(self) -> None:
        while self._pending:
            # One more turn of the event loop first: the requests that finish in it join the
            # batch (a batch's commit costs as much as a few of its rows).
            await asyncio.sleep(0)
            batch, waiters = self._pending, self._waiters
            self._pending, self._waiters = [], []
            try:
                await self._write(batch)
            except Exception:
                log.exception("%d request journal entries were not written", len(batch))
            for waiter in waiters:
                if not waiter.done():
                    waiter.set_result(None)

    async def _write(self, batch: list[tuple[Any, ...]]) -> None:
        async with self.database.write() as unit:
            await unit.insert_many(models.JournalEntry, COLUMNS, batch)
            written = collections.Counter(values[0] for values in batch)
            for account_id, count in written.items():
                await BOUND.wrote(unit, self.database, account_id, count, self.keep)


_journals: weakref.WeakKeyDictionary[Database, Journal] = weakref.WeakKeyDictionary()


def journal(database: Database, keep: int) -> Journal:
    """The journal writer of `database` in this process."""
    found = _journals.get(database)
    if found is None or found.keep != keep:
        found = _journals[database] = Journal(database, keep)
    return found


# An account's newest `keep` entries, in arrival order.
BOUND = Bound(lambda: models.JournalEntry, "account_id", "seq")


# --- reading --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Match:
    """Which entries of an account a list, count or verify takes."""

    operation: str | None = None
    method: str | None = None
    path_prefix: str | None = None
    status: str | None = None  # "201", or a class: "4xx"
    error_code: str | None = None
    since: datetime | None = None

    def condition(self, account_id: str, start: int | None) -> Any:
        """The SQL condition: the account's entries from seq `start` on that match."""
        entry = models.JournalEntry
        terms = [col(entry.account_id) == account_id]
        if start is not None:
            terms.append(col(entry.seq) >= start)
        if self.operation is not None:
            terms.append(col(entry.operation) == self.operation)
        if self.method is not None:
            terms.append(col(entry.method) == self.method.upper())
        if self.path_prefix:
            prefix = self.path_prefix
            terms.append(func.substr(col(entry.path), 1, len(prefix)) == prefix)
        if self.status is not None:
            if self.status.endswith("xx"):
                low = int(self.status[0]) * 100
                terms += [col(entry.status) >= low, col(entry.status) < low + 100]
            else:
                terms.append(col(entry.status) == int(self.status))
        if self.error_code is not None:
            terms.append(col(entry.error_code) == self.error_code)
        if self.since is not None:
            terms.append(col(entry.at) >= self.since)
        return and_(*terms)


async def entries(
    account_id: str, match: Match, limit: int, keep: int
) -> list[models.JournalEntry]:
    """The newest `limit` entries that match, oldest first, of the newest `keep`."""
    if keep <= 0:
        return []  # the journal records nothing
    async with db.read() as unit:
        start = await BOUND.floor(unit, account_id, keep)
        found = await unit.exec(
            select(models.JournalEntry)
            .where(match.condition(account_id, start))
            .order_by(col(models.JournalEntry.seq).desc())
            .limit(limit)
        )
        return list(reversed(found.all()))


async def count(account_id: str, match: Match, keep: int) -> int:
    """How many of the newest `keep` entries match."""
    if keep <= 0:
        return 0
    async with db.read() as unit:
        start = await BOUND.floor(unit, account_id, keep)
        found = await unit.exec(
            select(func.count())
            .select_from(models.JournalEntry)
            .where(match.condition(account_id, start))
        )
        return int(found.one())


async def clear(account_id: str) -> int:
    """The account's entries removed; how many."""
    async with db.write() as unit:
        result = await unit.exec(
            delete(models.JournalEntry).where(col(models.JournalEntry.account_id) == account_id)
        )
    return result.rowcount
