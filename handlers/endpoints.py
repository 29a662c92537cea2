"""Endpoints (`/endpoints`): spec section 4.9, and cloud endpoints. Agent endpoints are
recorded by the platform (fixtures here) and only listed and read; cloud endpoints are
created, changed and deleted here: their URL rules are tunnelgw.rules.endpoint_urls, their
traffic policy's tunnelgw.rules.traffic_policy, the account checks
tunnelgw.services.cloud_endpoints."""

from __future__ import annotations

import builtins
from typing import Any

from tunnelgw.core import ids
from tunnelgw.models import Endpoint
from tunnelgw.rules import endpoint_urls, traffic_policy
from tunnelgw.services import cloud_endpoints, crud, listing, paging
from tunnelgw.services.auth import Caller
from tunnelgw.services.crud import Body


async def list(
    caller: Caller,
    limit: int = paging.MAX_LIMIT,
    before_id: str | None = None,
    filter: str | None = None,  # noqa: A002 - the spec's parameter names
    id: builtins.list[str] | None = None,  # noqa: A002
    url: builtins.list[str] | None = None,
    ids: builtins.list[str] | None = None,
    urls: builtins.list[str] | None = None,
) -> crud.Listed:
    """`id`/`ids` and `url`/`urls` are exact-match filters (any of the ids, any of the
    URLs); with `filter`, an endpoint must pass all of them."""
    exact: dict[str, set[str]] = {}
    keep: builtins.list[tuple[str, str]] = []
    for field, values, names in (
        ("id", [*(id or ()), *(ids or ())], ("id", "ids")),
        ("url", [*(url or ()), *(urls or ())], ("url", "urls")),
    ):
        if values:
            exact[field] = set(values)
            keep += [(names[0], value) for value in values]
    if filter is None and not exact:
        return await crud.read_page(caller, Endpoint, "endpoints", limit, before_id)
    return await listing.read_filtered(
        caller, Endpoint, "endpoints", limit, before_id, filter, exact=exact, keep=keep
    )


async def create(caller: Caller, body: Body = None) -> tuple[dict[str, Any], int]:
    body = body or {}
    caller = caller
    target = endpoint_urls.check(body["url"], body.get("bindings"))
    policy = body["traffic_policy"]
    checked = traffic_policy.parse(policy, target.scheme)
    row = Endpoint.new(
        id=ids.new_id(Endpoint.PREFIX),
        account_id=caller.account_id,
        type=cloud_endpoints.CLOUD,
        proto=target.scheme,
        hostport=target.hostport,
        public_url=target.url,
        traffic_policy=policy,
        pooling_enabled=bool(body.get("pooling_enabled")),
        principal_id=caller.principal_id,  # its Ref: tunnelgw.models.principal.principal_ref
    )
    crud.apply_patch(row, body, crud.DESCRIBED_FIELDS)
    await cloud_endpoints.create(caller, row, target, checked)
    return row.to_api(), 201


async def update(caller: Caller, id: str, body: Body = None) -> dict[str, Any]:  # noqa: A002
    return (await cloud_endpoints.update(caller, id, body or {})).to_api()


async def delete(caller: Caller, id: str) -> tuple[None, int]:  # noqa: A002 - the spec's parameter name
    await cloud_endpoints.delete(caller, id)
    return None, 204


# The operations that are the shared CRUD ones (tunnelgw.services.crud.Resource).
resource = crud.Resource(Endpoint, "endpoints")
get = resource.get
