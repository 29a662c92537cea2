"""The write units' change observer (tunnelgw.storage.unit): told once before commit of what a
unit created, updated and deleted through its own methods, net; never for a rolled-back unit,
for rows changed by statements, or where no observer is set."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from sqlalchemy import delete
from sqlmodel import col

from tests.unit.test_migrations import url  # noqa: F401  (a fresh database per engine)
from tunnelgw.migrations import migrate
from tunnelgw.models import Account, IpPolicy
from tunnelgw.storage import unit as units
from tunnelgw.storage.db import Database
from tunnelgw.storage.unit import Changes, Unit


class Recorder:
    """Watches IP policies; records each call as (created, updated, deleted) ids."""

    def __init__(self) -> None:
        self.calls: list[tuple[list[str], list[str], list[tuple[str, Any]]]] = []

    def watches(self, model: type) -> bool:
        return model is IpPolicy

    async def deleting(self, unit: Unit, row: Any) -> Any:
        return f"was {row.description}"

    async def changed(self, unit: Unit, changes: Changes) -> None:
        self.calls.append(
            (
                [row.id for row in changes.created],
                [row.id for row in changes.updated],
                [(row.id, shape) for row, shape in changes.deleted],
            )
        )
        # What the observer writes is committed with the change, and not observed.
        unit.add(IpPolicy.new(id=f"ipp_by_observer_{len(self.calls)}", account_id="acct_obs"))


def _policy(id_: str, description: str = "") -> Any:
    return IpPolicy.new(id=id_, account_id="acct_obs", description=description)


def _run(url_: str, scenario: Any) -> Any:
    async def main() -> Any:
        database = Database(url_)
        try:
            async with database.write() as unit:
                unit.add(Account.new(id="acct_obs", name="observed"))
            return await scenario(database)
        finally:
            await database.dispose()

    return asyncio.run(main())


def test_the_observer_sees_net_changes_once_before_commit(url):  # noqa: F811
    migrate.upgrade(url)
    recorder = Recorder()

    async def scenario(database: Database) -> list[str]:
        async with database.write() as unit:
            unit.add_all([_policy("ipp_kept"), _policy("ipp_gone"), _policy("ipp_old", "old")])
        with units.observing(recorder):
            async with database.write() as unit:
                nothing = await unit.get(IpPolicy, "ipp_kept")  # loaded, unchanged
                assert nothing is not None
                changed = await unit.get(IpPolicy, "ipp_old")
                assert changed is not None
                changed.description = "new"
                created = _policy("ipp_new")
                unit.add(created)
                await unit.flush()
                created.description = "created then updated: created"
                brief = _policy("ipp_brief")
                unit.add(brief)
                await unit.delete(brief)  # created then deleted: nothing
                gone = await unit.get(IpPolicy, "ipp_gone")
                await unit.delete(gone)
                unit.add(Account.new(id="acct_unwatched", name="not watched"))
            async with database.write() as unit:  # nothing watched changed: no call
                await unit.get(IpPolicy, "ipp_kept")
        async with database.read() as unit:
            rows = await unit.select(IpPolicy, '"account_id" = ' + unit.mark, ["acct_obs"])
        return sorted(row.id for row in rows)

    ids = _run(url, scenario)
    assert recorder.calls == [(["ipp_new"], ["ipp_old"], [("ipp_gone", "was ")])]
    assert ids == ["ipp_by_observer_1", "ipp_kept", "ipp_new", "ipp_old"]


def test_no_observer_for_rollbacks_statements_or_unobserved_units(url):  # noqa: F811
    migrate.upgrade(url)
    recorder = Recorder()

    async def refused(database: Database) -> None:
        async with database.write() as unit:
            unit.add(_policy("ipp_rolled_back"))
            await unit.flush()
            raise RuntimeError("refused")

    async def scenario(database: Database) -> None:
        with units.observing(recorder):
            with pytest.raises(RuntimeError):
                await refused(database)
            async with database.write() as unit:  # a statement's change is not seen
                await unit.exec(delete(IpPolicy).where(col(IpPolicy.account_id) == "acct_obs"))
        async with database.write() as unit:  # no observer set here
            unit.add(_policy("ipp_unobserved"))
        with units.observing(recorder), units.observing(None):
            async with database.write() as unit:
                unit.add(_policy("ipp_quiet"))

    _run(url, scenario)
    assert recorder.calls == []
