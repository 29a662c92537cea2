"""Deep paging: a page taken with `before_id` from the middle of a huge account against a
page of a small one, and the query plans of the exact SQL the server runs for it.

Rows are bulk-inserted directly (one INSERT ... SELECT over a generated sequence). Their ids
are valid, sortable ids: `bkdhr_` + a 20-character stem of a real id + a 7-digit counter
(digits are base62 characters, and zero-padded decimals sort like the numbers).
"""

from __future__ import annotations

import asyncio
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tunnelgw.core import ids, timefmt
from tunnelgw.models import HttpResponseBackend
from tunnelgw.services import auth, paging
from tunnelgw.storage import records
from tunnelgw.storage.unit import Unit

PREFIX = HttpResponseBackend.PREFIX
COUNTER_DIGITS = 7
PAGE = 100
COLUMNS = (
    '"id", "account_id", "created_at", "description", "metadata", "body", "headers", "status_code"'
)
SQLITE_BULK = f"""
WITH RECURSIVE seq(n) AS (SELECT ? UNION ALL SELECT n + 1 FROM seq WHERE n < ?)
INSERT INTO "http_response_backend" ({COLUMNS})
SELECT '{PREFIX}_' || ? || printf('%0{COUNTER_DIGITS}d', n), ?, ?, 'bench', '', 'hello',
       '{{"content-type":"text/plain"}}', 200
FROM seq
"""
PG_BULK = f"""
INSERT INTO "http_response_backend" ({COLUMNS})
SELECT '{PREFIX}_' || %s || lpad(n::text, {COUNTER_DIGITS}, '0'), %s, now(), 'bench', '',
       'hello', '{{"content-type":"text/plain"}}', 200
FROM generate_series(%s::integer, %s::integer) AS n
"""


@dataclass(frozen=True)
class Layout:
    """Which synthetic ids each of the two accounts gets: counters 1..big for the big one,
    then big+1..big+small for the small one."""

    stem: str
    big: int
    small: int

    @classmethod
    def new(cls, big: int, small: int) -> Layout:
        if big + small >= 10**COUNTER_DIGITS:
            raise ValueError(f"at most {10**COUNTER_DIGITS - 1} rows")
        body = ids.new_id(PREFIX).partition("_")[2]
        return cls(body[: ids.BODY_LENGTH - COUNTER_DIGITS], big, small)

    def id_of(self, n: int) -> str:
        return f"{PREFIX}_{self.stem}{n:0{COUNTER_DIGITS}d}"

    def ranges(self) -> tuple[tuple[int, int], tuple[int, int]]:
        return (1, self.big), (self.big + 1, self.big + self.small)

    def middle_ids(self, which: int, count: int = 10) -> list[str]:
        """`count` ids around the middle of account `which` (0 big, 1 small)."""
        first, last = self.ranges()[which]
        middle = (first + last) // 2
        start = max(first + 1, middle - count // 2)
        return [self.id_of(n) for n in range(start, min(last, start + count) + 1)]


# Cursors the deep-paging scenario cycles through: pages of the middle of the list, so the
# figure is the keyset query's over the account's rows (and a server that kept pages would
# not hold them all).
CURSORS = 200


def page_paths(before_ids: list[str]) -> tuple[str, ...]:
    return tuple(f"{HttpResponseBackend.PATH}?limit={PAGE}&before_id={id_}" for id_ in before_ids)


# --- bulk inserts ---------------------------------------------------------------------------


def bulk_insert_sqlite(path: Path, layout: Layout, account_ids: list[str]) -> None:
    """The rows of both accounts, in one transaction."""
    created = records.sqlite_time_text(timefmt.utcnow())
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("BEGIN IMMEDIATE")
        for (first, last), account in zip(layout.ranges(), account_ids, strict=True):
            conn.execute(SQLITE_BULK, (first, last, layout.stem, account, created))
        conn.execute("COMMIT")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # into the database file, as settled
    finally:
        conn.close()


def pg_conninfo(url: str) -> str:
    return url.replace("postgresql+psycopg://", "postgresql://", 1)


def bulk_insert_pg(url: str, layout: Layout) -> list[str]:
    """Two accounts and their rows, then ANALYZE (as autovacuum would soon); the account ids."""
    import psycopg

    account_ids = [ids.new_id("acct") for _ in range(2)]
    with psycopg.connect(pg_conninfo(url)) as conn:
        for account, (first, last) in zip(account_ids, layout.ranges(), strict=True):
            conn.execute(
                'INSERT INTO "account" ("id", "name", "created_at") VALUES (%s, %s, now())',
                (account, "bench deep"),
            )
            conn.execute(PG_BULK, (layout.stem, account, first, last))
        conn.commit()
        conn.autocommit = True
        conn.execute('ANALYZE "http_response_backend"')
    return account_ids


# --- the server's SQL and its plan ----------------------------------------------------------


class _Capture:
    """A connection that records the statements a unit of work sends, and returns no rows."""

    def __init__(self) -> None:
        self.statements: list[tuple[str, tuple[Any, ...]]] = []

    async def fetch(self, sql: str, args: Any) -> list[Any]:
        self.statements.append((sql, tuple(args)))
        return []

    async def run(self, sql: str, args: Any) -> tuple[list[Any], int]:
        self.statements.append((sql, tuple(args)))
        return [], 0


def server_page_sql(dialect: str, account_id: str, before_id: str) -> tuple[str, tuple[Any, ...]]:
    """The statement tunnelgw runs for one list page with `before_id`: paging.page_rows
    on a unit whose connection records what it is sent."""
    capture = _Capture()
    unit = Unit(capture, dialect, writes=False)
    caller = auth.Caller(account_id, "usr_bench", True, "ak_bench")
    asyncio.run(paging.page_rows(unit, HttpResponseBackend, caller, PAGE, before_id))
    if len(capture.statements) != 1:
        raise RuntimeError(f"expected one statement per page, got {capture.statements}")
    return capture.statements[0]


INDEX = "ix_http_response_backend_account_id_id"  # the (account_id, id) index


@dataclass
class Plan:
    engine: str
    account: str  # "big" or "small"
    sql: str
    lines: list[str]
    flags: list[str] = field(default_factory=list)  # what looks wrong (empty: index used)

    def summary(self) -> list[str]:
        """The plan's nodes and conditions (PostgreSQL's buffer lines left out)."""
        keep = ("->", "Index Cond", "Filter", "Sort Key", "Execution Time", "SEARCH", "SCAN")
        return [line for n, line in enumerate(self.lines) if n == 0 or any(k in line for k in keep)]


def _index_flags(lines: list[str]) -> list[str]:
    if any(INDEX in line for line in lines):
        return []
    return [f"the ({INDEX}) index is not used"]


def explain_sqlite(path: Path, account: str, sql: str, args: tuple[Any, ...]) -> Plan:
    conn = sqlite3.connect(path)
    try:
        rows = conn.execute("EXPLAIN QUERY PLAN " + sql, args).fetchall()
    finally:
        conn.close()
    lines = [str(row[-1]) for row in rows]
    flags = [line for line in lines if line.startswith("SCAN") or "TEMP B-TREE" in line]
    return Plan("sqlite", account, sql, lines, flags + _index_flags(lines))


def explain_pg(url: str, account: str, sql: str, args: tuple[Any, ...]) -> Plan:
    """EXPLAIN ANALYZE of the page. A sort is flagged on the big account only: on a small one
    the planner may rightly sort the few rows it found. An index scan of the primary key is
    not flagged: where nearly every row is the account's (as with the big account here),
    walking `id` backwards and filtering on the account reads no more rows than the
    (account_id, id) index would, and the planner rightly takes it; it switches to the
    (account_id, id) index where the account's rows are rare (the small account)."""
    import psycopg

    with psycopg.connect(pg_conninfo(url), autocommit=True) as conn:
        rows = conn.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql, args).fetchall()
    lines = [str(row[0]) for row in rows]
    bad = ("Seq Scan", "Sort  (") if account == "big" else ("Seq Scan",)
    flags = [line.strip() for line in lines if any(b in line for b in bad)]
    if not any("Index Scan" in line or "Index Only Scan" in line for line in lines):
        flags.append("no index scan")
    return Plan("postgresql", account, sql, lines, flags)


def pg_execution_ms(plan: Plan) -> float | None:
    for line in plan.lines:
        if line.startswith("Execution Time:"):
            return float(line.split()[2])
    return None
