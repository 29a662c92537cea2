"""Units of work: commit on success, roll back on error, constraint violations as 409."""

from __future__ import annotations

import asyncio
import sqlite3
from typing import Any

import pytest
from sqlalchemy import text
from sqlmodel import col, select

from tests.unit.test_migrations import url  # noqa: F401  (a fresh database per engine)
from tunnelgw.core.errors import ApiError, Code
from tunnelgw.migrations import migrate
from tunnelgw.models import Account
from tunnelgw.storage.db import Database


def _run(url_: str, scenario) -> object:
    async def main() -> object:
        database = Database(url_)
        try:
            return await scenario(database)
        finally:
            await database.dispose()

    return asyncio.run(main())


def test_constraint_violation_is_a_conflict_and_writes_nothing(url):  # noqa: F811
    migrate.upgrade(url)

    async def add(database: Database, *accounts: Account) -> None:
        async with database.write() as unit:
            unit.add_all(accounts)

    async def scenario(database: Database) -> list[str]:
        await add(database, Account.new(id="acct_dup", name="first"))
        with pytest.raises(ApiError) as info:
            await add(
                database,
                Account.new(id="acct_other", name="written?"),
                Account.new(id="acct_dup", name="second"),
            )
        assert info.value.code is Code.CONFLICT
        async with database.read() as unit:
            return sorted((await unit.exec(select(Account.name))).all())

    assert _run(url, scenario) == ["first"]


def test_a_deadlock_victim_is_a_503_to_retry_and_writes_nothing(url):  # noqa: F811
    """Two units that lock two accounts in opposite orders: PostgreSQL aborts one to break
    the deadlock, which the client sees as 503 ERR_SERVICE_UNAVAILABLE with `Retry-After`
    (a contention, not its request's fault), with nothing of that unit written."""
    if url.startswith("sqlite"):
        pytest.skip("SQLite's write units are exclusive: they queue, never deadlock")
    migrate.upgrade(url)

    async def swap(database: Database, first: str, second: str, both: asyncio.Barrier) -> None:
        async with database.write() as unit:
            locked = await unit.get(Account, first, lock=True)
            assert locked is not None
            locked.name = f"by {first}"
            await both.wait()  # each holds its first account: the second lock closes a cycle
            await unit.get(Account, second, lock=True)

    async def scenario(database: Database) -> tuple[list[Any], list[str]]:
        async with database.write() as unit:
            unit.add_all([Account.new(id="acct_a", name="a"), Account.new(id="acct_b", name="b")])
        both = asyncio.Barrier(2)
        outcomes = await asyncio.gather(
            swap(database, "acct_a", "acct_b", both),
            swap(database, "acct_b", "acct_a", both),
            return_exceptions=True,
        )
        async with database.read() as unit:
            names = sorted((await unit.exec(select(Account.name))).all())
        return outcomes, names

    outcomes, names = _run(url, scenario)
    [error] = [outcome for outcome in outcomes if outcome is not None]
    assert isinstance(error, ApiError), repr(error)
    assert (error.code, error.status_code) == (Code.SERVICE_UNAVAILABLE, 503)
    assert error.headers == {"Retry-After": "1"}
    # The survivor's change is kept, the victim's is not.
    assert names in (["b", "by acct_a"], ["a", "by acct_b"])


def test_an_exception_in_the_block_rolls_back(url):  # noqa: F811
    migrate.upgrade(url)

    async def failing_handler(database: Database) -> None:
        async with database.write() as unit:
            unit.add(Account.new(id="acct_rolled_back"))
            await unit.flush()
            raise RuntimeError("handler failed")

    async def scenario(database: Database) -> int:
        with pytest.raises(RuntimeError, match="handler failed"):
            await failing_handler(database)
        async with database.read() as unit:
            return len((await unit.exec(select(Account))).all())

    assert _run(url, scenario) == 0


def test_write_units_save_changed_columns_and_reads_see_them(url):  # noqa: F811
    migrate.upgrade(url)

    async def scenario(database: Database) -> tuple[str, str, list[str]]:
        async with database.write() as unit:
            unit.add(Account.new(id="acct_a", name="before"))
            unit.add(Account.new(id="acct_b", name="untouched"))
        async with database.write() as unit:
            row = await unit.get(Account, "acct_a", lock=True)
            assert row is not None
            row.name = "after"
            # A row loaded twice in one write unit is the same object, however it is read
            # again (a query reading it must not replace it with the stored, older values).
            assert await unit.get(Account, "acct_a") is row
            assert await unit.select(Account, f'"id" = {unit.mark}', ["acct_a"]) == [row]
            assert (await unit.select_in(Account, "id", ["acct_a"]))[0] is row
            assert (await unit.exec(select(Account).where(Account.id == "acct_a"))).one() is row
        async with database.read() as unit:
            a = await unit.get(Account, "acct_a")
            b = await unit.get(Account, "acct_b")
            names = (await unit.exec(select(Account.name).order_by(Account.name))).all()
            missing = await unit.get(Account, "acct_missing")
        assert a is not None
        assert b is not None
        assert missing is None
        return a.name, b.name, names

    assert _run(url, scenario) == ("after", "untouched", ["after", "untouched"])


def test_queries_compile_once_and_shape_their_rows(url):  # noqa: F811
    from sqlalchemy import bindparam, delete
    from sqlmodel import col

    from tunnelgw.models import Principal
    from tunnelgw.storage.statements import Query

    migrate.upgrade(url)
    joined = Query(
        select(Principal, Account)
        .join(Account, col(Account.id) == col(Principal.account_id))
        .where(col(Principal.kind) == bindparam("kind"))
    )
    names = Query(select(Account.name).where(col(Account.id) == bindparam("id")))

    async def scenario(database: Database) -> tuple[object, ...]:
        async with database.write() as unit:
            unit.add(Account.new(id="acct_q", name="q"))
            await unit.flush()
            unit.add(Principal.new(id="usr_q", account_id="acct_q", kind="user", is_admin=True))
        async with database.read() as unit:
            (principal, account), *more = (await unit.exec(joined, {"kind": "user"})).all()
            name = (await unit.exec(names, {"id": "acct_q"})).one()
            with pytest.raises(RuntimeError, match="read unit"):
                unit.add(Account.new(id="acct_r"))
        async with database.write() as unit:
            gone = await unit.exec(delete(Principal).where(col(Principal.id) == "usr_q"))
        return principal.is_admin, account.name, more, name, gone.rowcount, joined._plans.keys()

    admin, account_name, more, name, deleted, dialects = _run(url, scenario)
    assert (admin, account_name, more, name, deleted) == (True, "q", [], "q", 1)
    assert len(list(dialects)) == 1


def test_rows_of_plain_columns_come_as_they_are_read(url):  # noqa: F811
    from sqlmodel import col

    from tunnelgw.models import Principal
    from tunnelgw.storage.statements import Query

    migrate.upgrade(url)
    plain = Query(select(col(Account.id), col(Account.name)).order_by(col(Account.id)))
    rows = Query(select(Principal, col(Account.name)).join(Account))

    async def scenario(database: Database) -> list[object]:
        async with database.write() as unit:
            unit.add_all([Account.new(id="acct_p1", name="one"), Account.new(id="acct_p2")])
            await unit.flush()
            unit.add(Principal.new(id="usr_p", account_id="acct_p1", kind="user"))
            await unit.flush()
            [(principal, name)] = (await unit.exec(rows)).all()
            return [
                (await unit.exec(plain)).all(),
                principal is await unit.get(Principal, "usr_p"),  # adopted: one record a row
                name,
            ]

    found = _run(url, scenario)
    assert found == [[("acct_p1", "one"), ("acct_p2", "")], True, "one"]
    dialect = "sqlite" if url.startswith("sqlite") else "postgresql"
    assert [query.plan(dialect).records for query in (plain, rows)] == [False, True]


def test_sqlite_reads_cannot_write(tmp_path):
    path = f"sqlite:///{tmp_path / 'ro.db'}"
    migrate.upgrade(path)

    async def scenario(database: Database) -> None:
        async with database.read() as unit:
            with pytest.raises(sqlite3.OperationalError, match="readonly"):
                await unit.exec(text("DELETE FROM account"))

    _run(path, scenario)


def test_sqlite_read_queries_run_on_the_writer_unless_it_has_a_transaction_open(tmp_path):
    """A read unit's queries use the writer's page cache (which the process's own commits do
    not drop) while the writer has no transaction open; during one they go to the reader, and
    so never see rows not yet committed."""
    path = f"sqlite:///{tmp_path / 'reads.db'}"
    migrate.upgrade(path)
    names = select(Account.name).where(col(Account.id).in_(["acct_r1", "acct_r2"]))

    async def scenario(database: Database) -> list[Any]:
        async with database.write() as unit:
            unit.add(Account.new(id="acct_r1", name="committed"))
        ran: dict[str, list[str]] = {"writer": [], "reader": []}
        for name, conn in (("writer", database._writer), ("reader", database._reader)):
            assert conn is not None
            conn.raw.set_trace_callback(
                lambda sql, seen=ran[name]: seen.append(sql) if "account" in sql else None
            )
        found: list[Any] = []
        async with database.read() as unit:
            found.append(sorted((await unit.exec(names)).all()))
        found.append((len(ran["writer"]), len(ran["reader"])))
        async with database.write() as writing:
            writing.add(Account.new(id="acct_r2", name="not yet"))
            await writing.flush()  # inserted, the transaction still open
            async with database.read() as unit:
                found.append(sorted((await unit.exec(names)).all()))
        found.append(len(ran["reader"]))
        async with database.read() as unit:
            found.append(sorted((await unit.exec(names)).all()))
        return found

    assert _run(path, scenario) == [
        ["committed"],
        (1, 0),  # the query ran on the writer, outside any transaction
        ["committed"],  # during the write unit: on the reader, without its row
        1,
        ["committed", "not yet"],
    ]


def test_the_sqlite_writer_keeps_a_small_page_cache_and_the_reader_the_default(tmp_path):
    """Memory per worker: the writer's cache is bounded (it touches few pages), the reader's
    stays SQLite's default."""
    from tunnelgw.storage.connections import WRITER_CACHE_KIB

    path = f"sqlite:///{tmp_path / 'cache.db'}"
    migrate.upgrade(path)

    async def scenario(database: Database) -> tuple[int, int]:
        async with database.write() as unit:
            unit.add(Account.new(id="acct_cache", name="c"))
        async with database.write() as unit:
            [(writer,)] = (await unit.exec(text("PRAGMA cache_size"))).all()
        async with database.read() as unit:
            [(reader,)] = (await unit.exec(text("PRAGMA cache_size"))).all()
        return writer, reader

    assert _run(path, scenario) == (
        -WRITER_CACHE_KIB,
        sqlite3.connect(":memory:").execute("PRAGMA cache_size").fetchone()[0],
    )


def test_text_statements_return_rows_and_changes_count_rows(url):  # noqa: F811

    migrate.upgrade(url)

    async def scenario(database: Database) -> tuple[object, ...]:
        async with database.write() as unit:
            unit.add_all([Account.new(id=f"acct_t{i}", name=f"t{i}") for i in range(3)])
        async with database.write() as unit:
            renamed = await unit.exec(text("UPDATE account SET name = 'x' WHERE id LIKE 'acct_t%'"))
        async with database.read() as unit:
            names = await unit.exec(text("SELECT name FROM account WHERE id LIKE 'acct_t%'"))
            some = await unit.select_in(Account, "id", ["acct_t0", "acct_t2", "no"])
        return renamed.rowcount, names.all(), sorted(a.id for a in some)

    renamed, names, some = _run(url, scenario)
    assert renamed == 3
    assert names == [("x",), ("x",), ("x",)]
    assert some == ["acct_t0", "acct_t2"]


def test_a_database_serves_one_event_loop_after_another_once_disposed(url):  # noqa: F811
    """PostgreSQL connections belong to the event loop that opened them: a database used in
    another loop without `dispose()` first says so, rather than failing inside the driver."""
    migrate.upgrade(url)
    database = Database(url)

    async def count(*, dispose: bool) -> int:
        try:
            async with database.read() as unit:
                return len(await unit.select(Account, "1 = 1", []))
        finally:
            if dispose:
                await database.dispose()

    first = asyncio.run(count(dispose=True))
    loop = asyncio.new_event_loop()
    try:
        assert loop.run_until_complete(count(dispose=False)) == first
        if database.is_sqlite:  # one connection per process, not per loop
            assert asyncio.run(count(dispose=False)) == first
        else:
            with pytest.raises(RuntimeError, match="another event loop"):
                asyncio.run(count(dispose=False))
    finally:
        loop.run_until_complete(database.dispose())
        loop.close()


def test_placeholders_are_numbered_for_postgresql():
    from tunnelgw.storage.statements import numbered

    assert (
        numbered('"a" = %s AND "b" IN (%s, %s) LIMIT %s') == '"a" = $1 AND "b" IN ($2, $3) LIMIT $4'
    )
    assert numbered("SELECT 1") == "SELECT 1"
    assert numbered("x LIKE 'a%%' AND y = %s") == "x LIKE 'a%' AND y = $1"
    assert numbered('"a" = $1::VARCHAR') == '"a" = $1::VARCHAR'  # compiled by SQLAlchemy


def test_a_literal_percent_in_a_compiled_statement_is_kept(url):  # noqa: F811
    """SQLAlchemy compiles for PostgreSQL in the hand-written statements' convention (`%%`
    for a literal `%`), so a literal `'%s...'` is not taken for a placeholder."""
    migrate.upgrade(url)

    async def scenario(database: Database) -> object:
        async with database.write() as unit:
            unit.add_all([Account.new(id="acct_p1", name="%sale"), Account.new(id="acct_p2")])
        async with database.read() as unit:
            found = await unit.exec(text("SELECT id FROM account WHERE name LIKE '%sal%'"))
        return found.all()

    assert _run(url, scenario) == [("acct_p1",)]


def test_sqlite_files_are_the_owners_alone(tmp_path, caplog):
    """The database, its -wal and -shm (the mode SQLite gives them is the database file's),
    made by the migration or by the server, whatever the umask; a database file others may
    read is reported."""
    import os

    old_umask = os.umask(0o022)
    try:
        for name, prepare in (("migrated.db", migrate.upgrade), ("served.db", lambda url: None)):
            path = tmp_path / name
            url = f"sqlite:///{path}"
            prepare(url)

            async def scenario(database: Database, path=path) -> dict[str, int]:
                async with database.write() as unit:
                    await unit.exec(text("CREATE TABLE IF NOT EXISTS t (x INTEGER)"))
                    await unit.exec(text("INSERT INTO t VALUES (1)"))
                suffixes = ("", "-wal", "-shm")  # while the connections are open
                return {s: os.stat(f"{path}{s}").st_mode & 0o777 for s in suffixes}

            assert _run(url, scenario) == {"": 0o600, "-wal": 0o600, "-shm": 0o600}, name
    finally:
        os.umask(old_umask)
    loose = tmp_path / "loose.db"
    sqlite3.connect(loose).close()
    loose.chmod(0o644)

    async def read(database: Database) -> None:
        async with database.read() as unit:
            await unit.exec(text("SELECT 1"))

    _run(f"sqlite:///{loose}", read)
    assert "loose.db is readable by other users; chmod 600 it" in caplog.text


# --- SQLite: the write units of one turn of the event loop share a transaction ------------


def _commits(database: Database) -> list[str]:
    """The transaction statements the SQLite writer runs from now on."""
    seen: list[str] = []
    database._sqlite(writer=True).raw.set_trace_callback(
        lambda sql: seen.append(sql) if sql in ("BEGIN IMMEDIATE", "COMMIT", "ROLLBACK") else None
    )
    return seen


async def _names(database: Database) -> list[str]:
    async with database.read() as unit:
        return sorted((await unit.exec(select(Account.name))).all())


def test_concurrent_write_units_commit_together_and_fail_alone(tmp_path):
    """Four requests' units in one turn: one commit; the one that raises and the one that
    conflicts leave nothing behind, and the others are not touched by them."""
    url_ = f"sqlite:///{tmp_path / 'g.db'}"
    migrate.upgrade(url_)

    async def add(database: Database, id_: str, name: str, fail: bool = False) -> None:
        async with database.write() as unit:
            unit.add(Account.new(id=id_, name=name))
            await unit.flush()
            if fail:
                raise RuntimeError("handler failed")

    async def scenario(database: Database) -> tuple[list[object], list[str], list[str]]:
        await add(database, "acct_taken", "earlier")
        statements = _commits(database)
        results = await asyncio.gather(
            add(database, "acct_a", "a"),
            add(database, "acct_b", "b", fail=True),
            add(database, "acct_taken", "c"),
            add(database, "acct_d", "d"),
            return_exceptions=True,
        )
        return results, statements, await _names(database)

    results, statements, names = _run(url_, scenario)
    assert results[0] is None
    assert results[3] is None
    assert isinstance(results[1], RuntimeError)
    assert isinstance(results[2], ApiError)
    assert results[2].code is Code.CONFLICT
    assert statements == ["BEGIN IMMEDIATE", "COMMIT"]
    assert names == ["a", "d", "earlier"]


def test_a_write_unit_returns_once_its_transaction_committed(tmp_path):
    """What a unit wrote is in the file when the unit returns (another process reads it), and
    a unit still open when the turn ends commits the transaction when it ends."""
    path = tmp_path / "g.db"
    migrate.upgrade(f"sqlite:///{path}")

    def elsewhere() -> list[str]:
        with sqlite3.connect(path) as other:
            return sorted(name for (name,) in other.execute("SELECT name FROM account"))

    async def add(database: Database, id_: str, pause: float | None = None) -> list[str]:
        async with database.write() as unit:
            unit.add(Account.new(id=id_, name=id_))
            if pause is not None:
                await asyncio.sleep(pause)  # the unit stays open across turns of the loop
        return elsewhere()

    async def scenario(database: Database) -> tuple[list[str], list[str], list[str]]:
        statements = _commits(database)
        quick, slow = await asyncio.gather(add(database, "acct_q"), add(database, "acct_s", 0.05))
        return quick, slow, statements

    quick, slow, statements = _run(f"sqlite:///{path}", scenario)
    assert quick == slow == ["acct_q", "acct_s"]
    assert statements == ["BEGIN IMMEDIATE", "COMMIT"]


async def dangling_principal(unit: Any) -> None:
    """Insert a principal of no account, which only the commit finds at fault (SQLite: the
    foreign key's check deferred to it)."""
    await unit.exec(text("PRAGMA defer_foreign_keys=ON"))
    await unit.exec(
        text(
            "INSERT INTO principal (id, account_id, created_at, kind, name, "
            "is_admin, active) VALUES ('usr_x', 'acct_missing', "
            "'2026-01-01 00:00:00', 'user', 'x', 0, 1)"
        )
    )


def test_a_transaction_that_fails_to_commit_fails_each_of_its_units(tmp_path):
    """A unit whose violation only the commit finds (a deferred foreign key) takes the
    transaction's other units with it: each is told, and none of their rows is kept."""
    url_ = f"sqlite:///{tmp_path / 'g.db'}"
    migrate.upgrade(url_)

    async def add(database: Database, id_: str, dangling: bool = False) -> None:
        async with database.write() as unit:
            if dangling:
                await dangling_principal(unit)
            else:
                unit.add(Account.new(id=id_, name=id_))

    async def scenario(database: Database) -> tuple[list[object], list[str]]:
        results = await asyncio.gather(
            add(database, "acct_first"), add(database, "", dangling=True), return_exceptions=True
        )
        return results, await _names(database)

    results, names = _run(url_, scenario)
    assert [type(r) for r in results] == [ApiError, ApiError]
    assert all(r.code is Code.CONFLICT for r in results)  # type: ignore[union-attr]
    assert names == []


def test_the_first_unit_cancelled_while_it_waits_still_commits_for_the_others(tmp_path):
    """The first unit of a turn commits the shared transaction: cancelled while it waits its
    turn (its block had ended), it commits before it goes, and the unit that joined it does
    not wait forever."""
    url_ = f"sqlite:///{tmp_path / 'g.db'}"
    migrate.upgrade(url_)

    async def add(database: Database, id_: str) -> None:
        async with database.write() as unit:
            unit.add(Account.new(id=id_, name=id_))

    async def scenario(database: Database) -> tuple[list[object], list[str]]:
        first = asyncio.create_task(add(database, "acct_first"))
        joined = asyncio.create_task(add(database, "acct_joined"))
        await asyncio.sleep(0)  # both units ran and ended; the first waits a turn
        first.cancel()
        async with asyncio.timeout(5):
            results = await asyncio.gather(first, joined, return_exceptions=True)
        return results, await _names(database)

    results, names = _run(url_, scenario)
    assert isinstance(results[0], asyncio.CancelledError)
    assert results[1] is None
    assert names == ["acct_first", "acct_joined"]


def test_a_query_made_by_a_function_builds_its_statement_at_its_first_run(url):  # noqa: F811
    from sqlalchemy import bindparam
    from sqlmodel import col

    from tunnelgw.storage.statements import Query

    migrate.upgrade(url)
    built: list[str] = []

    def statement() -> Any:
        built.append("built")
        return select(col(Account.name)).where(col(Account.id) == bindparam("id"))

    names = Query(statement)
    made = list(built)

    async def scenario(database: Database) -> list[object]:
        async with database.write() as unit:
            unit.add(Account.new(id="acct_f", name="f"))
        async with database.read() as unit:
            return [(await unit.exec(names, {"id": "acct_f"})).one() for _ in range(3)]

    assert (made, _run(url, scenario), built) == ([], ["f", "f", "f"], ["built"])
