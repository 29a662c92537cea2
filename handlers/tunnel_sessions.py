"""Tunnel sessions (`/tunnel_sessions`): the sessions of connected agents, which simulated
agents start (the admin API, tunnelgw.services.agents). `stop` ends one with its tunnels and
endpoints; `restart` reconnects it as a new session; `update` fetches the newest agent version
of its major version, which it runs once restarted."""

from __future__ import annotations

from tunnelgw.models import TunnelSession
from tunnelgw.services import agents, crud
from tunnelgw.services.auth import Caller
from tunnelgw.services.crud import Body

# Each command acts on the caller's session `id` (a body `id` equals it: the spec's
# PathIdEcho, checked before the handler).


async def stop(caller: Caller, id: str, body: Body = None) -> tuple[None, int]:  # noqa: A002
    await agents.command(caller, id, agents.end)
    return None, 204


async def restart(caller: Caller, id: str, body: Body = None) -> tuple[None, int]:  # noqa: A002
    await agents.command(caller, id, agents.restart)
    return None, 204


async def update(caller: Caller, id: str, body: Body = None) -> tuple[None, int]:  # noqa: A002
    await agents.command(caller, id, agents.update)
    return None, 204


# The operations that are the shared CRUD ones (tunnelgw.services.crud.Resource).
resource = crud.Resource(TunnelSession, "tunnel_sessions")
get, list = resource.get, resource.list
