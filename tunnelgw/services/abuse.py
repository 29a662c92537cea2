"""Abuse reports stored with which of their hostnames this server serves: the hostnames of
reserved domains (a wildcard domain covers the names under it) and of endpoints, in any
account."""

from __future__ import annotations

from collections.abc import Sequence

from tunnelgw.models import AbuseReport, Endpoint, ReservedDomain
from tunnelgw.services import quotas
from tunnelgw.storage import db
from tunnelgw.storage.unit import Unit


def _covering(name: str) -> list[str]:
    """`name` and the wildcard domains that would cover it (`*.b.c` and `*.c` for `a.b.c`)."""
    labels = name.split(".")
    return [name, *("*." + ".".join(labels[i:]) for i in range(1, len(labels)))]


async def served(unit: Unit, names: Sequence[str]) -> set[str]:
    """The ones of `names` (lower-case hostnames) that a reserved domain or an endpoint of
    any account has: reports are about anyone's content, not only the reporter's."""
    candidates = sorted({c for name in names for c in _covering(name)})
    domains = {row.domain for row in await unit.select_in(ReservedDomain, "domain", candidates)}
    found = {name for name in names if any(c in domains for c in _covering(name))}
    mark = unit.mark
    for name in set(names) - found:
        # An endpoint's hostport is `host:port`; a host names no LIKE wildcard (% or _).
        rows = await unit.select(
            Endpoint, f'"hostport" = {mark} OR "hostport" LIKE {mark}', [name, f"{name}:%"]
        )
        if rows:
            found.add(name)
    return found


async def report(row: AbuseReport, names: Sequence[str]) -> AbuseReport:
    """CREATE: the report `row` with its hostnames `names`, each marked whether this server
    serves it, admitted by its quota and inserted."""
    async with db.write() as unit:
        served_now = await served(unit, names)
        row.hostnames = [{"hostname": name, "served": name in served_now} for name in names]
        await quotas.add(unit, row)
    return row
