"""Simulated agents (the admin API and the testing kit): `connect` checks what the platform
checks when an agent connects with a tunnel credential's authtoken, then starts its tunnel
session, tunnels and agent endpoints in the caller's unit of work; `end` removes them again
(disconnect, stop). `restart` and `request_update` are the platform's session commands."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from sqlalchemy import bindparam

from tunnelgw.core import ids, scopes, settings, timefmt
from tunnelgw.core.errors import ApiError, Code
from tunnelgw.core.platform_errors import masked
from tunnelgw.models import AccessToken, Credential, Endpoint, Principal, Tunnel
from tunnelgw.models.tunnel_group_member import partners_of, regroup_account
from tunnelgw.models.tunnel_session import TunnelSession
from tunnelgw.rules import acls, cidrs, endpoint_urls, traffic_policy
from tunnelgw.services import auth, cloud_endpoints, crud, quotas, restrictions
from tunnelgw.services.auth import Caller
from tunnelgw.storage import db
from tunnelgw.storage.statements import Query
from tunnelgw.storage.unit import Unit

T = TypeVar("T")


@dataclass(frozen=True)
class Wanted:
    """One thing an agent asks for: an endpoint at `url`, or (no URL) a labeled tunnel."""

    url: str = ""
    labels: Mapping[str, str] = field(default_factory=dict)
    upstream_url: str = ""
    traffic_policy: str = ""
    pooling_enabled: bool = False


@dataclass(frozen=True)
class Agent:
    """How the agent connects: its authtoken and what it says about itself."""

    authtoken: str
    ip: str
    agent_version: str
    os: str
    region: str = "us"
    metadata: str = ""


@dataclass
class Started:
    """What a connect made: the session, its tunnels and its endpoints, in request order."""

    session: TunnelSession
    tunnels: list[Tunnel]
    endpoints: list[Endpoint]


_LABEL_KEY = re.compile(r"[A-Za-z0-9_.-]{1,128}")


def wanted(index: int, item: Mapping[str, Any]) -> Wanted:
    """One item of a connect's `endpoints` (validated against the spec already): a URL or
    labels, not both; label keys as tunnel labels have them."""
    url, labels = item.get("url", ""), item.get("labels") or {}
    if bool(url) == bool(labels):
        raise ApiError(
            Code.CONFLICTING_FIELDS if url else Code.MISSING_FIELD,
            f"endpoints[{index}] needs a url (an endpoint) or labels (a labeled tunnel), not both.",
            field=f"endpoints.{index}",
        )
    for key in labels:
        if not _LABEL_KEY.fullmatch(key):
            raise ApiError(
                Code.INVALID_FIELD,
                f"endpoints[{index}].labels: the key {key[:64]!r} is not 1 to 128 letters, "
                "digits, '_', '.' or '-'.",
                field=f"endpoints.{index}.labels",
            )
    return Wanted(
        url=url,
        labels=dict(labels),
        **{name: item[name] for name in _WANTED_FIELDS if name in item},
    )


_WANTED_FIELDS = ("upstream_url", "traffic_policy", "pooling_enabled")


async def _credential(unit: Unit, account_id: str, authtoken: str) -> Credential:
    """The account's tunnel credential with `authtoken`; for an access token's token, a
    stand-in credential (the token's id and owner, no ACL) once the token is usable and holds
    `tunnel:start`."""
    if authtoken.startswith(auth.ACCESS_TOKEN_PREFIX):
        return await _access_token(unit, account_id, authtoken)
    found = await _by_token(unit, Credential, account_id, authtoken)
    if not found:
        raise ApiError(
            Code.AGENT_AUTH_FAILED,
            "The authtoken is not the token of a tunnel credential of this account. Create "
            "one (POST /credentials) and connect with the token its create response shows.",
            context={"authtoken": masked(authtoken)},
            field="authtoken",
        )
    return found[0]


async def _by_token(unit: Unit, model: type[T], account_id: str, authtoken: str) -> list[T]:
    """The rows of `model` (a tunnel credential or an access token) of the account whose
    stored hash is `authtoken`'s."""
    return await unit.select(
        model,
        f'"token_hash" = {unit.mark} AND "account_id" = {unit.mark}',
        [auth.hash_token(authtoken), account_id],
    )


async def _access_token(unit: Unit, account_id: str, authtoken: str) -> Credential:
    found = await _by_token(unit, AccessToken, account_id, authtoken)
    if not found:
        raise ApiError(
            Code.AGENT_AUTH_FAILED,
            "The authtoken is the form of an access token, but not one of this account (or "
            "it was deleted). Create one with the tunnel:start scope (POST /access_tokens).",
            field="authtoken",
            context={"authtoken": masked(authtoken)},
        )
    token = found[0]
    problem = auth.unusable(token.id, token.expires_at, token.revoked_at)
    if problem is not None:
        raise ApiError(
            Code.AGENT_AUTH_FAILED,
            problem,
            field="authtoken",
            access_token_id=token.id,
            context={"authtoken": masked(authtoken)},
        )
    if scopes.TUNNEL_START not in token.scopes:
        raise ApiError(
            Code.SCOPE_REQUIRED,
            f"The access token {token.id!r} does not have the {scopes.TUNNEL_START!r} scope "
            "an agent needs to start a tunnel session; its owner can add it "
            "(PATCH /access_tokens/{id}).",
            scope=scopes.TUNNEL_START,
            access_token_id=token.id,
            field="authtoken",
            context={"scope": scopes.TUNNEL_START, "id": token.id},
        )
    # Never added to the unit: it carries the token's id, account and owner to `start`.
    return Credential.new(
        id=token.id,
        account_id=token.account_id,
        owner_id=token.owner_id,
        token_hash=token.token_hash,
        acl=[],
    )


async def connect(unit: Unit, account_id: str, agent: Agent, wanted: Sequence[Wanted]) -> Started:
    """Check the agent's connect and start its session in `unit` (a write unit): the
    authtoken names a credential of the account, then `start`'s checks."""
    credential = await _credential(unit, account_id, agent.authtoken)
    return await start(unit, credential, agent, wanted)


async def start(
    unit: Unit,
    credential: Credential,
    agent: Agent,
    wanted: Sequence[Wanted],
    *,
    session_id: str | None = None,
) -> Started:
    """Start the session of an agent holding `credential` (its authtoken checked, or named
    by a fixture): the owner's state, the account's `agent` IP restrictions, then for each
    wanted endpoint the credential's ACL, the reserved domain or address, and the URL's use.
    `session_id` is the session's id when chosen up front (a fixture's)."""
    account_id = credential.account_id
    owner = await unit.get(Principal, credential.owner_id)
    if owner is not None and not owner.active:
        raise ApiError(
            Code.PRINCIPAL_INACTIVE,
            f"The credential {credential.id!r} belongs to the inactive bot user "
            f"{owner.id!r}; an admin can make it active again (PATCH /bot_users/{{id}}).",
            principal_id=owner.id,
        )
    client = cidrs.address(agent.ip)
    if client is None:
        raise ApiError(
            Code.INVALID_FIELD, f"ip {agent.ip[:64]!r} is not an IP address.", field="ip"
        )
    await restrictions.check(unit, account_id, "agent", client)
    now = timefmt.now()
    session = TunnelSession.new(
        id=session_id or ids.new_id(TunnelSession.PREFIX),
        account_id=account_id,
        created_at=now,
        started_at=now,
        agent_version=agent.agent_version,
        os=agent.os,
        region=agent.region,
        ip=str(client),
        meta=agent.metadata,
        credential_id=credential.id,
    )
    await quotas.add(unit, session)
    started = Started(session, [], [])
    for index, item in enumerate(wanted):
        await _start(unit, started, credential, item, index)
    if any(tunnel.labels for tunnel in started.tunnels):
        await regroup_account(unit, account_id)
    await unit.flush()
    return started


async def _start(
    unit: Unit, started: Started, credential: Credential, item: Wanted, index: int
) -> None:
    """Start one wanted tunnel (and its endpoint, for a URL) of the session."""
    session = started.session
    common = {"account_id": session.account_id, "region": session.region}
    tunnel = Tunnel.new(
        id=ids.new_id(Tunnel.PREFIX),
        started_at=session.started_at,
        meta=session.meta,
        labels=dict(item.labels),
        forwards_to=item.upstream_url,
        tunnel_session_id=session.id,
        **common,
    )
    if not item.url:
        if not acls.allows(credential.acl, labels=item.labels):
            labels = ", ".join(f"{key}={value}" for key, value in item.labels.items())
            raise _denied(credential, index, "the labels " + labels, ("label", labels))
        await quotas.add(unit, tunnel)
        started.tunnels.append(tunnel)
        return
    try:
        target = endpoint_urls.check(item.url, None)
        policy = (
            traffic_policy.parse(item.traffic_policy, target.scheme)
            if item.traffic_policy
            else None
        )
    except ApiError as exc:
        raise _at(exc, index) from None
    if target.scheme == "tcp":
        allowed = acls.allows(credential.acl, address=target.hostport)
    else:
        allowed = acls.allows(credential.acl, hostname=target.host)
    if not allowed:
        tcp = target.scheme == "tcp"
        denied = ("address", target.hostport) if tcp else ("name", target.host)
        raise _denied(credential, index, denied[1], denied)
    endpoint = Endpoint.new(
        id=ids.new_id(Endpoint.PREFIX),
        created_at=session.started_at,
        updated_at=session.started_at,
        proto=target.scheme,
        hostport=target.hostport,
        public_url=target.url,
        type="ephemeral",
        tunnel_id=tunnel.id,
        meta=session.meta,
        upstream_url=item.upstream_url,
        traffic_policy=item.traffic_policy,
        pooling_enabled=item.pooling_enabled,
        principal_id=credential.owner_id,  # a user's Ref has uri "" (principal_ref)
        tunnel_session_id=session.id,
        **common,
    )
    try:
        await quotas.add(unit, endpoint)
        # The URL rules of cloud endpoints: the reserved domain or address (a free name
        # under the shared domain reserved on the fly), pooling, the policy's secrets.
        await cloud_endpoints.place(unit, session.account_id, endpoint, target)
        await cloud_endpoints.check_pool(unit, session.account_id, endpoint)
        if policy is not None:
            await cloud_endpoints.check_secrets(unit, session.account_id, policy)
    except ApiError as exc:
        raise _at(exc, index) from None
    tunnel.public_url, tunnel.proto, tunnel.endpoint_id = target.url, target.scheme, endpoint.id
    await quotas.add(unit, tunnel)
    started.tunnels.append(tunnel)
    started.endpoints.append(endpoint)


def _at(exc: ApiError, index: int) -> ApiError:
    """`exc` (about one wanted endpoint's `url`, `bindings` or `traffic_policy`) with its
    field named inside the connect's body: `endpoints.<index>.<field>`."""
    field = exc.details.get("field")
    exc.details["field"] = f"endpoints.{index}.{field}" if field else f"endpoints.{index}"
    return exc


def _denied(credential: Credential, index: int, what: str, denied: tuple[str, str]) -> ApiError:
    """The refusal of binding `what`; `denied` is its kind (name, address or label) and
    value, which the platform profile's message names."""
    return ApiError(
        Code.AGENT_BIND_DENIED,
        f"endpoints[{index}]: the ACL of the credential {credential.id!r} does not allow "
        f"binding {what}; add a bind rule for it (PATCH /credentials/{{id}}) or connect with "
        "another credential.",
        field=f"endpoints.{index}",
        context={"denied": denied[0], "value": denied[1]},
        credential_id=credential.id,
    )


async def end(unit: Unit, session: TunnelSession) -> None:
    """Remove the session with its tunnels and endpoints, as when its agent goes away: one
    row at a time, so each fires its deleted event (tunnelgw.services.events)."""
    condition = f'"tunnel_session_id" = {unit.mark}'
    for model in (Endpoint, Tunnel):
        for row in await unit.select(model, condition, [session.id]):
            await unit.delete(row)
    await unit.delete(session)


async def restart(unit: Unit, session: TunnelSession) -> TunnelSession:
    """The agent restarts itself and reconnects as a new session (the platform's documents:
    "it reconnects with a new tunnel session ID"), running the version an update command
    fetched, if any; its tunnels and endpoints move to the new session. Refused on Windows,
    where the platform's agent cannot restart itself."""
    if session.os.lower() == "windows":
        raise ApiError(
            Code.AGENT_COMMAND_REFUSED,
            f"The agent of {session.id!r} runs on Windows, where an agent cannot restart "
            "itself; stop it and start it again instead.",
            context={"command": "restart"},
            id=session.id,
        )
    now = timefmt.now()
    values = {name: getattr(session, name) for name in _KEPT}
    renewed = TunnelSession.new(
        **values,
        id=ids.new_id(TunnelSession.PREFIX),
        created_at=now,
        started_at=now,
        agent_version=session.updated_to or session.agent_version,
        updated_to="",
    )
    unit.add(renewed)
    moved = {"old": session.id, "new": renewed.id}
    await unit.exec(_MOVE_ENDPOINTS, moved)
    await unit.exec(_MOVE_TUNNELS, moved)
    await unit.delete(session)
    return renewed


_KEPT = ("account_id", "os", "region", "ip", "transport", "meta", "credential_id")
_MOVE_ENDPOINTS = Query(
    Endpoint.__table__.update()  # type: ignore[attr-defined]
    .where(Endpoint.__table__.c.tunnel_session_id == bindparam("old"))  # type: ignore[attr-defined]
    .values(tunnel_session_id=bindparam("new"))
)
_MOVE_TUNNELS = Query(
    Tunnel.__table__.update()  # type: ignore[attr-defined]
    .where(Tunnel.__table__.c.tunnel_session_id == bindparam("old"))  # type: ignore[attr-defined]
    .values(tunnel_session_id=bindparam("new"))
)


def _version(text: str) -> tuple[int, ...] | None:
    parts = text.split(".")
    return tuple(int(p) for p in parts) if all(p.isdigit() for p in parts) else None


def request_update(session: TunnelSession) -> None:
    """Record the version the agent updates to (the newest of its major version,
    `agent_latest_version`); it runs it once restarted. Refused as the platform refuses it:
    no update available (already the newest, or a different major version: never updated
    automatically), or an update fetched and not yet applied by a restart."""
    latest = settings.current().agent_latest_version
    if session.updated_to:
        raise ApiError(
            Code.AGENT_COMMAND_REFUSED,
            f"The agent of {session.id!r} has updated to {session.updated_to} already; "
            "restart it (POST /tunnel_sessions/{id}/restart) to run that version.",
            id=session.id,
        )
    current, newest = _version(session.agent_version), _version(latest)
    if current is None or newest is None or current[0] != newest[0] or current >= newest:
        raise ApiError(
            Code.AGENT_COMMAND_REFUSED,
            f"No update is available for the agent of {session.id!r} (version "
            f"{session.agent_version}; the newest of its major version here is {latest}, and "
            "an agent is never updated to a new major version).",
            id=session.id,
        )
    session.updated_to = latest


async def started_api(unit: Unit, started: Started) -> dict[str, Any]:
    """The admin API's answer to a connect: the session, its tunnels (with the tunnel group
    backends that group them) and its endpoints."""
    partners = await partners_of(unit, "tunnel_id", [tunnel.id for tunnel in started.tunnels])
    return {
        "tunnel_session": started.session.to_api(),
        "tunnels": [tunnel.to_api(partners[tunnel.id]) for tunnel in started.tunnels],
        "endpoints": [endpoint.to_api() for endpoint in started.endpoints],
    }


async def update(unit: Unit, session: TunnelSession) -> None:
    """The tunnel session command `update` (`request_update`)."""
    request_update(session)


async def command(
    caller: Caller, id_: str, act: Callable[[Unit, TunnelSession], Awaitable[object]]
) -> None:
    """Carry out `act` on the caller's session `id_`, locked (404 when it is not the
    caller's): a tunnel session command (stop, restart, update) or the admin API's
    disconnect."""
    async with db.write() as unit:
        session = await crud.get_owned(unit, TunnelSession, caller, id_, lock=True)
        await act(unit, session)


async def connect_now(account_id: str, agent: Agent, wanted: Sequence[Wanted]) -> dict[str, Any]:
    """The admin API's connect: `connect` in a unit of its own; the session started, in
    its API shape (`started_api`)."""
    async with db.write() as unit:
        started = await connect(unit, account_id, agent, wanted)
        return await started_api(unit, started)
