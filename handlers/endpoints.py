"""Endpoints (`/endpoints`): spec section 4.9, and cloud endpoints. Agent endpoints are
recorded by the platform (fixtures here) and only listed and read; cloud endpoints are
created, changed and deleted here: their URL rules are tunnelgw.rules.endpoint_urls, their
traffic policy's tunnelgw.rules.traffic_policy, the account checks
tunnelgw.services.cloud_endpoints."""

from __future__ import annotations

import builtins
from typing import Any

from tunnelgw.core import ids, timefmt
from tunnelgw.core.errors import ApiError, Code
from tunnelgw.models import Endpoint
from tunnelgw.rules import endpoint_urls, traffic_policy
from tunnelgw.services import auth, cloud_endpoints, crud, listing, paging, quotas
from tunnelgw.services.auth import Caller
from tunnelgw.services.crud import Body
from tunnelgw.storage import db
from tunnelgw.storage.unit import Unit

CLOUD = "cloud"


async def list(
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
        return await crud.read_page(Endpoint, "endpoints", limit, before_id)
    return await listing.read_filtered(
        Endpoint, "endpoints", limit, before_id, filter, exact=exact, keep=keep
    )


async def create(body: Body = None) -> tuple[dict[str, Any], int]:
    body = body or {}
    caller = auth.caller()
    target = endpoint_urls.check(body["url"], body.get("bindings"))
    policy = body["traffic_policy"]
    checked = traffic_policy.parse(policy, target.scheme)
    row = Endpoint.new(
        id=ids.new_id(Endpoint.PREFIX),
        account_id=caller.account_id,
        type=CLOUD,
        proto=target.scheme,
        hostport=target.hostport,
        public_url=target.url,
        traffic_policy=policy,
        pooling_enabled=bool(body.get("pooling_enabled")),
        principal_id=caller.principal_id,  # its Ref: tunnelgw.models.principal.principal_ref
    )
    crud.apply_patch(row, body, crud.DESCRIBED_FIELDS)
    async with db.write() as unit:
        await quotas.add(unit, row)  # first: it takes the account's turn (PostgreSQL)
        await cloud_endpoints.place(unit, caller.account_id, row, target)
        await cloud_endpoints.check_pool(unit, caller.account_id, row)
        await cloud_endpoints.check_secrets(unit, caller.account_id, checked)
    return row.to_api(), 201


async def _cloud(unit: Unit, caller: Caller, id_: str) -> Endpoint:
    """The caller's cloud endpoint `id_`, locked; 404, or 409 for an agent endpoint."""
    row = await crud.get_managed(unit, Endpoint, caller, id_, lock=True)
    if row.type != CLOUD:
        raise ApiError(
            Code.AGENT_ENDPOINT_READ_ONLY,
            f"{id_} is an {row.type} endpoint, which its agent manages: stop or reconfigure "
            "the agent instead; only cloud endpoints are changed or deleted through the API.",
            id=id_,
        )
    return row


async def update(id: str, body: Body = None) -> dict[str, Any]:  # noqa: A002
    body = body or {}
    caller = auth.caller()
    async with db.write() as unit:
        row = await _cloud(unit, caller, id)
        url, bindings = body.get("url"), body.get("bindings")
        pooling = body.get("pooling_enabled")
        if url or bindings or pooling is not None:
            await quotas.take_turn(
                unit, caller.account_id
            )  # as creates do: one URL check at a time
            target = endpoint_urls.check(url or row.public_url, bindings or row.bindings)
            if target.scheme != row.proto:
                raise ApiError(
                    Code.ENDPOINT_SCHEME_CHANGE,
                    f"The endpoint is {row.proto}; a {target.scheme} URL needs a new endpoint "
                    "(create it, then delete this one).",
                    field="url",
                )
            if pooling is not None:
                row.pooling_enabled = pooling
            await cloud_endpoints.place(unit, caller.account_id, row, target)
            await cloud_endpoints.check_pool(unit, caller.account_id, row)
        if body.get("traffic_policy") is not None:
            checked = traffic_policy.parse(body["traffic_policy"], row.proto)
            await cloud_endpoints.check_secrets(unit, caller.account_id, checked)
            row.traffic_policy = body["traffic_policy"]
        crud.apply_patch(row, body, crud.DESCRIBED_FIELDS)
        row.updated_at = timefmt.utcnow()
    return row.to_api()


async def delete(id: str) -> tuple[None, int]:  # noqa: A002 - the spec's parameter name
    async with db.write() as unit:
        await unit.delete(await _cloud(unit, auth.caller(), id))
    return None, 204


# The operations that are the shared CRUD ones (tunnelgw.services.crud.Resource).
resource = crud.Resource(Endpoint, "endpoints")
get = resource.get
