"""Reserved TCP addresses (`/reserved_addrs`): the service assigns `addr`, a free port of the
configured range on the region's TCP host under the shared domain, unique across accounts."""

from __future__ import annotations

from typing import Any

from tunnelgw.models import ReservedAddr
from tunnelgw.services import crud, reservations
from tunnelgw.services.auth import Caller
from tunnelgw.services.crud import Body

DEFAULT_REGION = "us"


async def create(caller: Caller, body: Body = None) -> tuple[dict[str, Any], int]:
    body = body or {}
    region = body.get("region") or DEFAULT_REGION
    addr = await reservations.reserve_addr(caller, region, body)
    return addr.to_api(), 201


# The operations that are the shared CRUD ones (tunnelgw.services.crud.Resource).
resource = crud.Resource(ReservedAddr, "reserved_addrs")
get, list, update, delete = (
    resource.get,
    resource.list,
    resource.update,
    resource.delete,
)
