"""Cloud endpoints against the account's state: the reserved domain or TCP address a public
URL must match (a name under the service's shared domain is reserved on the fly, as the
platform does), the pooling rule for endpoints sharing a URL and binding, and the vault
secrets a traffic policy reads; a cloud endpoint created, changed and deleted in one unit
each. The URL and policy rules themselves are pure (tunnelgw.rules.endpoint_urls,
tunnelgw.rules.traffic_policy)."""

from __future__ import annotations

from typing import Any

from tunnelgw.core import ids, settings, timefmt
from tunnelgw.core.errors import ApiError, Code
from tunnelgw.models import Endpoint, ReservedAddr, ReservedDomain, VaultSecret
from tunnelgw.rules import endpoint_urls, hostnames, traffic_policy
from tunnelgw.rules.endpoint_urls import Target
from tunnelgw.services import crud, quotas, vaults
from tunnelgw.services.auth import Caller
from tunnelgw.storage import db
from tunnelgw.storage.unit import Unit

CLOUD = "cloud"


async def place(unit: Unit, account_id: str, row: Endpoint, target: Target) -> None:
    """Set `row`'s URL fields from `target`, and its reserved domain or address: the one of
    account that a public URL matches (ApiError 400 when none does)."""
    row.public_url = target.url
    row.proto = target.scheme
    row.hostport = target.hostport
    row.bindings = [target.binding]
    row.reserved_domain_id = None
    row.reserved_addr_id = None
    if target.needs == "domain":
        row.reserved_domain_id = await _domain(unit, account_id, target)
    elif target.needs == "addr":
        row.reserved_addr_id = await _addr(unit, account_id, target)


async def _domain(unit: Unit, account_id: str, target: Target) -> str:
    """The account's reserved domain that `target.host` matches: the name itself, else the
    nearest wildcard domain covering it; a free name under the shared domain is reserved
    for the account in this unit of work (counting against its reserved_domain quota)."""
    candidates = endpoint_urls.domain_candidates(target.host)
    found = {row.domain: row for row in await unit.select_in(ReservedDomain, "domain", candidates)}
    for name in candidates:
        row = found.get(name)
        if row is not None and row.account_id == account_id:
            return row.id
    shared = settings.current().shared_domain.lower()
    if hostnames.is_under(target.host, shared) and not hostnames.is_wildcard(target.host):
        if target.host in found:
            raise ApiError(
                Code.DOMAIN_IN_USE,
                f"{target.host!r} is reserved by another account; pick another name.",
                field="url",
            )
        return await _reserve(unit, account_id, target.host)
    raise ApiError(
        Code.ENDPOINT_DOMAIN_NOT_RESERVED,
        f"{target.host!r} is not a reserved domain of this account, nor covered by a "
        "wildcard one; reserve it first (POST /reserved_domains), or use a name under "
        f"{shared}.",
        field="url",
    )


async def _reserve(unit: Unit, account_id: str, domain: str) -> str:
    row = ReservedDomain.new(
        id=ids.new_id(ReservedDomain.PREFIX),
        account_id=account_id,
        domain=domain,
        description="Reserved for a cloud endpoint",
    )
    await quotas.add(unit, row)
    return row.id


async def _addr(unit: Unit, account_id: str, target: Target) -> str:
    condition = f'"host" = {unit.mark} AND "port" = {unit.mark}'
    for row in await unit.select(ReservedAddr, condition, [target.host, target.port]):
        if row.account_id == account_id:
            return row.id
    raise ApiError(
        Code.ENDPOINT_ADDR_NOT_RESERVED,
        f"{target.hostport} is not a reserved TCP address of this account; reserve one "
        "(POST /reserved_addrs) and use its addr in a tcp:// URL.",
        field="url",
    )


async def check_pool(unit: Unit, account_id: str, row: Endpoint) -> None:
    """ApiError(409 ERR_ENDPOINT_URL_IN_USE) when another endpoint of the account has `row`'s
    URL and binding and pooling is not on for all of them (the platform's pooling rule)."""
    condition = f'"account_id" = {unit.mark} AND "public_url" = {unit.mark}'
    others = [
        other
        for other in await unit.select(Endpoint, condition, [account_id, row.public_url])
        if other.id != row.id and list(other.bindings) == list(row.bindings)
    ]
    if not others:
        return
    unpooled = [other.id for other in others if not other.pooling_enabled]
    if row.pooling_enabled and not unpooled:
        return
    names = ", ".join(other.id for other in others)
    why = (
        f"endpoints without pooling have it ({', '.join(unpooled)})"
        if unpooled
        else f"the endpoints that have it ({names}) pool, but this one does not enable pooling"
    )
    raise ApiError(
        Code.ENDPOINT_URL_IN_USE,
        f"{row.public_url} ({row.bindings[0]}) is in use: {why}; endpoints share a URL only "
        "when pooling_enabled is true on all of them.",
        context={"pooling": "enabled" if row.pooling_enabled else "disabled"},
        field="url",
        endpoints=names,
    )


async def check_secrets(unit: Unit, account_id: str, policy: traffic_policy.Policy) -> None:
    """ApiError(400 ERR_TRAFFIC_POLICY_SECRET_NOT_FOUND) naming the first `secrets.get` of the
    policy that no secret of the account answers. Each secret found is share-locked
    to the end of the unit: a concurrent delete of it waits, then sees this endpoint."""
    for vault, name in policy.secrets:
        secret = await vaults.find_secret(unit, account_id, vault, name)
        if secret is None or await unit.get(VaultSecret, secret.id, lock="share") is None:
            raise ApiError(
                Code.TRAFFIC_POLICY_SECRET_NOT_FOUND,
                f'The traffic policy reads secrets.get("{vault}", "{name}"), but the account '
                f"has no vault {vault!r} holding a secret {name!r}; create it first (POST "
                "/vaults, POST /vault_secrets) or change the policy.",
                field="traffic_policy",
                vault=vault,
                secret=name,
            )


async def using_secret(unit: Unit, account_id: str, vault: str, name: str) -> list[str]:
    """The ids of the account's cloud endpoints whose traffic policy reads the secret `name`
    of the vault `vault` (oldest first)."""
    condition = f'"account_id" = {unit.mark} AND "type" = {unit.mark}'
    found = []
    for row in await unit.select(Endpoint, condition, [account_id, "cloud"]):
        if name not in row.traffic_policy or vault not in row.traffic_policy:
            continue  # cannot read it: no need to parse
        try:
            secrets = traffic_policy.parse(row.traffic_policy).secrets
        except ApiError:
            continue  # stored before a rule changed: it reads nothing the checker accepts
        if (vault, name) in secrets:
            found.append(row)
    return [row.id for row in sorted(found, key=lambda row: (row.created_at, row.id))]


async def create(
    caller: Caller, row: Endpoint, target: Target, checked: traffic_policy.Policy
) -> Endpoint:
    """CREATE /endpoints: the cloud endpoint `row` admitted by its quota, placed on its
    domain or address (`place`), its pool and the secrets its traffic policy reads checked."""
    async with db.write() as unit:
        await quotas.add(unit, row)  # first: it takes the account's turn (PostgreSQL)
        await place(unit, caller.account_id, row, target)
        await check_pool(unit, caller.account_id, row)
        await check_secrets(unit, caller.account_id, checked)
    return row


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


async def update(caller: Caller, id_: str, body: dict[str, Any]) -> Endpoint:
    """PATCH /endpoints/{id}: the caller's cloud endpoint with the body's URL, bindings,
    pooling, traffic policy, description and metadata, checked as a create's."""
    async with db.write() as unit:
        row = await _cloud(unit, caller, id_)
        url, bindings = body.get("url"), body.get("bindings")
        pooling = body.get("pooling_enabled")
        if url or bindings or pooling is not None:
            # As creates do: one URL check at a time.
            await quotas.take_turn(unit, caller.account_id)
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
            await place(unit, caller.account_id, row, target)
            await check_pool(unit, caller.account_id, row)
        if body.get("traffic_policy") is not None:
            checked = traffic_policy.parse(body["traffic_policy"], row.proto)
            await check_secrets(unit, caller.account_id, checked)
            row.traffic_policy = body["traffic_policy"]
        crud.apply_patch(row, body, crud.DESCRIBED_FIELDS)
        row.updated_at = timefmt.utcnow()
    return row


async def delete(caller: Caller, id_: str) -> None:
    """DELETE /endpoints/{id}: the caller's cloud endpoint removed (409 for an agent's)."""
    async with db.write() as unit:
        await unit.delete(await _cloud(unit, caller, id_))
