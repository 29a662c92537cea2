"""Tunnel sessions (`/tunnel_sessions`): the sessions of connected agents, which simulated
agents start (the admin API, tunnelgw.services.agents). `stop` ends one with its tunnels and
endpoints; `restart` reconnects it as a new session; `update` fetches the newest agent version
of its major version, which it runs once restarted."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from tunnelgw.models import TunnelSession
from tunnelgw.services import agents, auth, crud
from tunnelgw.services.crud import Body
from tunnelgw.storage import db
from tunnelgw.storage.unit import Unit


async def _command(
    id_: str, body: Body, act: Callable[[Unit, TunnelSession], Awaitable[object]]
) -> tuple[None, int]:
    """Carry out a command on the caller's session `id_` (a body `id` equals it: the
    spec's PathIdEcho, checked before the handler)."""
    async with db.write() as unit:
        session = await crud.get_owned(unit, TunnelSession, auth.caller(), id_, lock=True)
        await act(unit, session)
    return None, 204


async def _update(unit: Unit, session: TunnelSession) -> None:
    agents.request_update(session)


async def stop(id: str, body: Body = None) -> tuple[None, int]:  # noqa: A002
    return await _command(id, body, agents.end)


async def restart(id: str, body: Body = None) -> tuple[None, int]:  # noqa: A002
    return await _command(id, body, agents.restart)


async def update(id: str, body: Body = None) -> tuple[None, int]:  # noqa: A002
    return await _command(id, body, _update)


# The operations that are the shared CRUD ones (tunnelgw.services.crud.Resource).
resource = crud.Resource(TunnelSession, "tunnel_sessions")
get, list = resource.get, resource.list
