"""SQLite group commit: the write units of one turn of the event loop share one transaction.

A process has one SQLite writer connection and serialises its write units with an asyncio
lock (`GroupCommit.lock`). The first unit of a turn begins a transaction with
`BEGIN IMMEDIATE` (writers of other processes queue in SQLite's busy handler meanwhile); each
later unit of the turn is a savepoint in it. A unit that fails rolls back to its savepoint and
the others are untouched; the first unit, alone in the transaction when it fails, rolls all of
it back. The first unit commits the transaction a turn of the event loop after it ended (the
units ready in that turn have joined by then), or, when a unit is open across turns, that unit
commits as it ends. Every unit returns only once the transaction committed, so nothing is
answered before it is durable; a commit that fails fails each of its units.

A commit writes the pages the transaction changed to the WAL and costs as much as a few rows:
under concurrent creates one commit serves many, and the savepoints (their statement journal
in memory: `temp_store=MEMORY`) cost much less (bench/README.md, issue 31). A unit alone in
its turn pays one turn of the event loop of waiting.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

from tunnelgw.storage.connections import SqliteConnection, begin_immediate, raise_if_conflict
from tunnelgw.storage.unit import Unit

_SAVEPOINT = "SAVEPOINT unit"
_RELEASE = "RELEASE unit"
_ROLLBACK_TO = "ROLLBACK TO unit"


class Transaction:
    """The transaction the units of one turn share: the futures of the units waiting for it
    to commit, told when it commits or fails (`error`)."""

    __slots__ = ("error", "waiters")

    def __init__(self) -> None:
        self.waiters: list[asyncio.Future[None]] = []
        self.error: BaseException | None = None

    def end(self, error: BaseException | None) -> None:
        self.error = error
        for waiter in self.waiters:
            if not waiter.done():
                waiter.set_result(None)


class Member:
    """One write unit's place in a transaction: a savepoint in it, or its first unit."""

    __slots__ = ("savepoint", "transaction")

    def __init__(self, transaction: Transaction, *, savepoint: bool) -> None:
        self.transaction = transaction
        self.savepoint = savepoint


class GroupCommit:
    """The write transactions of one SQLite database in this process. `writer()` opens (or
    returns) the writer connection; `current()` is it, or None once the database is closed;
    `committed()` is told of each commit."""

    def __init__(
        self,
        writer: Callable[[], SqliteConnection],
        current: Callable[[], SqliteConnection | None],
        committed: Callable[[], None],
    ) -> None:
        self.lock = asyncio.Lock()
        self._writer = writer
        self._current = current
        self._committed = committed  # after each commit (the database's checkpoints)
        self._open: Transaction | None = None
        self._due = False  # its turn ended while a unit was open: that unit commits

    async def join(self) -> Member:
        """Take the write lock and a place in the open transaction (begun when there is
        none): a savepoint, unless the unit is the transaction's first."""
        await self.lock.acquire()
        try:
            raw = self._writer().raw
            if self._open is None:
                begin_immediate(raw)
                self._open = Transaction()
                return Member(self._open, savepoint=False)
            raw.execute(_SAVEPOINT)
            return Member(self._open, savepoint=True)
        except BaseException:
            self.lock.release()
            raise

    async def leave(self, member: Member, unit: Unit, exc: BaseException | None) -> None:
        """End a unit: its changes written and its savepoint released, or rolled back when
        `exc` (or the writing) failed; then wait for the transaction's commit."""
        transaction, raw = member.transaction, self._writer().raw
        waiter: asyncio.Future[None] | None = None
        try:
            if exc is None:
                try:
                    await unit._commit_changes()
                    if member.savepoint:
                        raw.execute(_RELEASE)
                except BaseException as failure:
                    self._undo(member, failure)
                    raise_if_conflict(failure)
                    raise
                if member.savepoint:  # the transaction's first unit commits it
                    waiter = asyncio.get_running_loop().create_future()
                    transaction.waiters.append(waiter)
            else:
                self._undo(member, exc)
                raise_if_conflict(exc)
        finally:
            if self._due:  # the turn ended while this unit was open
                self._commit()
            self.lock.release()
        if exc is not None:  # the unit failed (rolled back): its exception goes on
            return
        if waiter is not None:
            await waiter
        else:
            try:
                await asyncio.sleep(0)  # a turn: the units ready in it join the transaction
            finally:  # cancelled too: the others wait for the commit
                due = self._end(transaction)
            if due is not None:
                await due
        if transaction.error is not None:
            error = transaction.error
            raise_if_conflict(error)
            raise RuntimeError(f"the database did not commit: {error}") from error

    def _end(self, transaction: Transaction) -> asyncio.Future[None] | None:
        """Commit `transaction` unless it ended already (failed); when a unit is open in it,
        that unit commits as it ends, and the future returned is done then."""
        if self._open is not transaction:
            return None
        if not self.lock.locked():
            self._commit()
            return None
        self._due = True
        waiter = asyncio.get_running_loop().create_future()
        transaction.waiters.append(waiter)
        return waiter

    def _close(self) -> Transaction | None:
        """The open transaction, no longer open (its units are told by its `end`)."""
        transaction, self._open, self._due = self._open, None, False
        return transaction

    def _commit(self) -> None:
        """Commit the open transaction and tell its units (no unit is open in it)."""
        transaction = self._close()
        if transaction is None:
            return
        connection = self._current()
        if connection is None:  # closed meanwhile: the transaction went with it
            transaction.end(RuntimeError("the database was closed before the commit"))
            return
        try:
            connection.raw.execute("COMMIT")
        except Exception as exc:
            with contextlib.suppress(Exception):
                connection.raw.execute("ROLLBACK")
            transaction.end(exc)
        else:
            transaction.end(None)
            self._committed()

    def _undo(self, member: Member, error: BaseException) -> None:
        """Roll a unit back: to its savepoint, or the whole transaction when the unit is its
        first or SQLite rolled the transaction back already (a full disk, an I/O error): then
        the transaction's other units fail too."""
        raw: Any = self._writer().raw
        if raw.in_transaction and member.savepoint:
            with contextlib.suppress(Exception):
                raw.execute(_ROLLBACK_TO)
                raw.execute(_RELEASE)
                return
        transaction = self._close()
        if transaction is not None:
            transaction.end(error)
        with contextlib.suppress(Exception):
            raw.execute("ROLLBACK")
