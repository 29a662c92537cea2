"""Reserved TCP addresses (`ra_`): a host of the service's shared domain and a port, assigned
at creation (tunnelgw.tcp_addrs) and unique across accounts; referenced by endpoints."""

from __future__ import annotations

from typing import Any, ClassVar

from sqlalchemy import Index, String, bindparam, select
from sqlmodel import Field

from tunnelgw.core import ids
from tunnelgw.models.base import DescribedResource
from tunnelgw.storage.statements import Query
from tunnelgw.storage.unit import Unit


class ReservedAddr(DescribedResource, table=True):
    __tablename__ = "reserved_addr"
    __table_args__ = (
        Index("ix_reserved_addr_account_id_id", "account_id", "id"),
        # An address is reserved once across all accounts; also the free-port lookup.
        Index("ux_reserved_addr_host_port", "host", "port", unique=True),
    )
    PREFIX: ClassVar[str] = "ra"
    EVENT_KIND: ClassVar[str | None] = "reserved_addr"
    PATH: ClassVar[str] = "/reserved_addrs"
    FIXTURE_SECTION: ClassVar[str | None] = "reserved_addrs"
    CACHED_RENDERING: ClassVar[bool] = True  # to_api(): the row and base URL only

    host: str = Field(sa_type=String(253))  # lower case
    port: int
    region: str = Field(default="us", sa_type=String(8))

    @property
    def addr(self) -> str:
        return f"{self.host}:{self.port}"

    def to_api(self) -> dict[str, Any]:
        return {**self.common_api(), "addr": self.addr, "region": self.region}


# Random ports tried before listing the host's taken ports: with half the range taken, eight
# misses in a row happen once in 256 reservations.
PROBES = 8


async def free_port(unit: Unit, host: str, low: int, high: int) -> int | None:
    """A free port of `low..high` on `host`, chosen at random (repeatably in seeded mode);
    None if every one is taken. (The unique index is the last word when two reservations
    race.)"""
    source = ids.random_source("ports")
    for _ in range(PROBES):
        port = source.randint(low, high)
        if not await addr_taken(unit, host, port):
            return port
    taken = set((await unit.exec(_PORTS_OF_HOST, {"host": host})).all())
    free = [port for port in range(low, high + 1) if port not in taken]
    return source.choice(free) if free else None


async def addr_taken(unit: Unit, host: str, port: int) -> bool:
    """Whether `host:port` is reserved (by any account)."""
    return (await unit.exec(_TAKEN, {"host": host, "port": port})).first() is not None


_TAKEN = Query(
    select(ReservedAddr.id)  # type: ignore[call-overload]
    .where(ReservedAddr.host == bindparam("host"), ReservedAddr.port == bindparam("port"))
    .limit(1)
)
_PORTS_OF_HOST = Query(
    select(ReservedAddr.port).where(ReservedAddr.host == bindparam("host"))  # type: ignore[call-overload]
)
