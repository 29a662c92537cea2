"""AI gateway API keys (`/ai_gateway_api_keys`): the platform's Go client v8 shapes
(`AIGatewayAPIKeyCreate`, `AIGatewayAPIKeyUpdate`, `AIGatewayAPIKey`). Keys belong to the
account (any principal manages them); the token is returned by create only and stored as its
SHA-256; `endpoint_id` names an endpoint of the account (404 `ERR_REFERENCE_NOT_FOUND`),
`""` on PATCH unsets it."""

from __future__ import annotations

from typing import Any

from tunnelgw.core import ids
from tunnelgw.models import AiGatewayApiKey
from tunnelgw.models.ai_gateway_api_key import redacted
from tunnelgw.services import ai_gateway_api_keys, auth, crud
from tunnelgw.services.auth import Caller
from tunnelgw.services.crud import Body

# The tokens' own prefix: they are no credential of this API, and look unlike its keys.
TOKEN_PREFIX = "tgwai_"  # noqa: S105 - a public prefix, not a secret


async def create(caller: Caller, body: Body = None) -> tuple[dict[str, Any], int]:
    body = body or {}
    caller = caller
    token = TOKEN_PREFIX + ids.new_secret()
    key = AiGatewayApiKey.new(
        id=ids.new_id(AiGatewayApiKey.PREFIX),
        account_id=caller.account_id,
        token_hash=auth.hash_token(token),
        display_name=redacted(token),
        created_by=caller.principal_id,
        last_updated_by=caller.principal_id,
    )
    key.updated_at = key.created_at
    crud.apply_patch(key, body, crud.DESCRIBED_FIELDS)
    await ai_gateway_api_keys.create(caller, key, body.get("endpoint_id"))
    return key.to_api(token=token), 201


async def update(caller: Caller, id: str, body: Body = None) -> dict[str, Any]:  # noqa: A002
    body = body or {}
    return (await ai_gateway_api_keys.update(caller, id, body)).to_api()


# The operations that are the shared CRUD ones (tunnelgw.services.crud.Resource).
resource = crud.Resource(AiGatewayApiKey, "ai_gateway_api_keys")
get, list, delete = resource.get, resource.list, resource.delete
