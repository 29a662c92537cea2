"""Reserved TCP addresses (`/reserved_addrs`): the service assigns `addr`, a free port of the
configured range on the region's TCP host under the shared domain, unique across accounts."""

from __future__ import annotations

from typing import Any

from tunnelgw.core import ids, settings
from tunnelgw.core.errors import ApiError, Code
from tunnelgw.models import ReservedAddr
from tunnelgw.models.reserved_addr import free_port
from tunnelgw.services import auth, crud, quotas
from tunnelgw.services.crud import Body
from tunnelgw.storage import db

DEFAULT_REGION = "us"


async def create(body: Body = None) -> tuple[dict[str, Any], int]:
    body = body or {}
    config = settings.current()
    region = body.get("region") or DEFAULT_REGION
    host = config.tcp_host(region)
    async with db.write() as unit:
        port = await free_port(unit, host, config.tcp_port_min, config.tcp_port_max)
        if port is None:
            raise ApiError(
                Code.NO_FREE_ADDRESS,
                f"Every port of {config.tcp_port_min}..{config.tcp_port_max} on {host} is "
                "reserved; release an address or widen the range (TUNNELGW_TCP_PORT_MIN/MAX).",
                host=host,
            )
        addr = ReservedAddr.new(
            id=ids.new_id(ReservedAddr.PREFIX),
            account_id=auth.caller().account_id,
            host=host,
            port=port,
            region=region,
        )
        crud.apply_patch(addr, body, crud.DESCRIBED_FIELDS)
        # A concurrent reservation of the same port loses on the unique index (409).
        await quotas.add(unit, addr)
    return addr.to_api(), 201


# The operations that are the shared CRUD ones (tunnelgw.services.crud.Resource).
resource = crud.Resource(ReservedAddr, "reserved_addrs")
get, list, update, delete = (
    resource.get,
    resource.list,
    resource.update,
    resource.delete,
)
