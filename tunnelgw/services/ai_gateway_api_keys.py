"""AI gateway API keys stored: the endpoint a key names is an endpoint of the account, read in
the unit that writes the key."""

from __future__ import annotations

from typing import Any

from tunnelgw.core import timefmt
from tunnelgw.models import AiGatewayApiKey, Endpoint
from tunnelgw.services import crud, quotas
from tunnelgw.services.auth import Caller
from tunnelgw.storage import db
from tunnelgw.storage.unit import Unit


async def _endpoint(unit: Unit, caller: Caller, endpoint_id: str) -> str:
    """The id of the caller's endpoint `endpoint_id`, share-locked so a concurrent delete
    waits for this unit (then unsets the key's endpoint)."""
    row = await crud.get_reference(unit, Endpoint, caller, endpoint_id, "endpoint_id", lock="share")
    return row.id


async def create(caller: Caller, key: AiGatewayApiKey, endpoint_id: str | None) -> AiGatewayApiKey:
    """CREATE: `key` admitted by its quota and inserted, naming the endpoint `endpoint_id`
    when given ("" is unset)."""
    async with db.write() as unit:
        await quotas.add(unit, key)  # first: it takes the account's turn (PostgreSQL)
        if endpoint_id:
            key.endpoint_id = await _endpoint(unit, caller, endpoint_id)
    return key


async def update(caller: Caller, id_: str, body: dict[str, Any]) -> AiGatewayApiKey:
    """PATCH: description, metadata and `endpoint_id` ("" unsets it) of the caller's key."""
    async with db.write() as unit:
        key = await crud.get_managed(unit, AiGatewayApiKey, caller, id_, lock=True)
        endpoint_id = body.get("endpoint_id")
        if endpoint_id is not None:
            key.endpoint_id = await _endpoint(unit, caller, endpoint_id) if endpoint_id else None
        crud.apply_patch(key, body, crud.DESCRIBED_FIELDS)
        key.updated_at = timefmt.utcnow()
        key.last_updated_by = caller.principal_id
    return key
