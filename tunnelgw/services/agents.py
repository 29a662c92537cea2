"""Simulated agents (the admin API and the testing kit): `connect` checks what the platform
checks when an agent connects with a tunnel credential's authtoken, then starts its tunnel
session, tunnels and agent endpoints in the caller's unit of work; `end` removes them again
(disconnect, stop). `restart` and `request_update` are the platform's session commands."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from sqlalchemy import bindparam, delete
from sqlmodel import col

from models import Credential, Endpoint, Principal, ReservedAddr, ReservedDomain, Tunnel
from models.endpoint import DEFAULT_PORTS
from models.tunnel_group_member import partners_of, regroup_account
from models.tunnel_session import TunnelSession
from tunnelgw.core import ids, settings, timefmt
from tunnelgw.core.errors import ApiError, Code
from tunnelgw.rules import acls, cidrs, hostnames
from tunnelgw.services import auth, quotas, restrictions
from tunnelgw.storage.statements import Query
from tunnelgw.storage.unit import Unit

SCHEMES = ("http", "https", "tls", "tcp")


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
    """The account's tunnel credential with `authtoken`."""
    found = await unit.select(
        Credential,
        f'"token_hash" = {unit.mark} AND "account_id" = {unit.mark}',
        [auth.hash_token(authtoken), account_id],
    )
    if not found:
        raise ApiError(
            Code.AGENT_AUTH_FAILED,
            "The authtoken is not the token of a tunnel credential of this account. Create "
            "one (POST /credentials) and connect with the token its create response shows.",
            field="authtoken",
        )
    return found[0]


def _wildcards(host: str) -> list[str]:
    """The reserved names that could hold `host`: itself and `*.` each of its parents."""
    labels = host.split(".")
    return [host] + ["*." + ".".join(labels[i:]) for i in range(1, len(labels) - 1)]


async def _domain(unit: Unit, account_id: str, host: str, index: int) -> str | None:
    """The id of the account's reserved domain that holds `host` (exact first, then the
    closest wildcard); None for an unreserved name under the shared domain; else ApiError."""
    names = _wildcards(host)
    held = {row.domain: row for row in await unit.select_in(ReservedDomain, "domain", names)}
    for name in names:
        row = held.get(name)
        if row is None:
            continue
        if row.account_id == account_id:
            return row.id
        raise ApiError(
            Code.DOMAIN_RESERVED_ELSEWHERE,
            f"endpoints[{index}]: {host!r} is reserved by another account ({name!r}); use a "
            "domain this account reserved (POST /reserved_domains).",
            field=f"endpoints.{index}.url",
        )
    if hostnames.is_under(host, settings.current().shared_domain):
        return None
    raise ApiError(
        Code.DOMAIN_NOT_RESERVED,
        f"endpoints[{index}]: {host!r} is not a reserved domain of this account; reserve it "
        f"(POST /reserved_domains) or use a name under {settings.current().shared_domain!r}.",
        field=f"endpoints.{index}.url",
    )


async def _address(unit: Unit, account_id: str, host: str, port: int, index: int) -> str:
    """The id of the account's reserved address `host:port`; else ApiError."""
    found = await unit.select(
        ReservedAddr,
        f'"host" = {unit.mark} AND "port" = {unit.mark} AND "account_id" = {unit.mark}',
        [host, port, account_id],
    )
    if not found:
        raise ApiError(
            Code.ADDRESS_NOT_RESERVED,
            f"endpoints[{index}]: {host}:{port} is not a reserved address of this account; "
            "reserve one (POST /reserved_addrs) and use its addr.",
            field=f"endpoints.{index}.url",
        )
    return found[0].id


def _parsed(url: str, index: int) -> tuple[str, str, int]:
    """The scheme, lower-case host and port of an endpoint URL; ApiError(400) otherwise."""
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        port = None
        parts = parts._replace(path="?")  # an invalid port: refused below
    scheme, host = parts.scheme.lower(), (parts.hostname or "").lower()
    valid = (
        scheme in SCHEMES
        and hostnames.matches(hostnames.INGRESS, host)
        and parts.path in ("", "/")
        and not (parts.query or parts.fragment or parts.username)
        and (scheme != "tcp" or port is not None)
    )
    if not valid:
        raise ApiError(
            Code.INVALID_FIELD,
            f"endpoints[{index}].url {url[:256]!r} is not an endpoint URL: http://, https://, "
            "tls:// or tcp:// and a hostname (a port for tcp://), no path, query or user.",
            field=f"endpoints.{index}.url",
        )
    return scheme, host, port or DEFAULT_PORTS[scheme]


def _public_url(scheme: str, host: str, port: int) -> str:
    default = DEFAULT_PORTS.get(scheme)
    return f"{scheme}://{host}" if port == default else f"{scheme}://{host}:{port}"


async def _url_free(unit: Unit, account_id: str, wanted: Wanted, url: str, index: int) -> None:
    """ApiError(409) when an endpoint of the account has `url` already, unless it and the new
    one both enable pooling."""
    taken = await unit.select(
        Endpoint, f'"account_id" = {unit.mark} AND "public_url" = {unit.mark}', [account_id, url]
    )
    if taken and not (wanted.pooling_enabled and all(row.pooling_enabled for row in taken)):
        raise ApiError(
            Code.ENDPOINT_URL_IN_USE,
            f"endpoints[{index}]: {url!r} is already the URL of the endpoint {taken[0].id!r}; "
            "stop it first, or enable pooling on both to share the URL.",
            field=f"endpoints.{index}.url",
            endpoint_id=taken[0].id,
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
            raise _denied(
                credential,
                index,
                "the labels " + ", ".join(f"{key}={value}" for key, value in item.labels.items()),
            )
        await quotas.add(unit, tunnel)
        started.tunnels.append(tunnel)
        return
    scheme, host, port = _parsed(item.url, index)
    domain_id = address_id = None
    if scheme == "tcp":
        if not acls.allows(credential.acl, address=f"{host}:{port}"):
            raise _denied(credential, index, f"{host}:{port}")
        address_id = await _address(unit, session.account_id, host, port, index)
    else:
        if not acls.allows(credential.acl, hostname=host):
            raise _denied(credential, index, host)
        domain_id = await _domain(unit, session.account_id, host, index)
    public_url = _public_url(scheme, host, port)
    await _url_free(unit, session.account_id, item, public_url, index)
    endpoint = Endpoint.new(
        id=ids.new_id(Endpoint.PREFIX),
        created_at=session.started_at,
        updated_at=session.started_at,
        proto=scheme,
        hostport=f"{host}:{port}",
        public_url=public_url,
        type="ephemeral",
        reserved_domain_id=domain_id,
        reserved_addr_id=address_id,
        tunnel_id=tunnel.id,
        meta=session.meta,
        upstream_url=item.upstream_url,
        traffic_policy=item.traffic_policy,
        pooling_enabled=item.pooling_enabled,
        principal_id=credential.owner_id,
        tunnel_session_id=session.id,
        **common,
    )
    tunnel.public_url, tunnel.proto, tunnel.endpoint_id = public_url, scheme, endpoint.id
    await quotas.add(unit, tunnel)
    await quotas.add(unit, endpoint)
    started.tunnels.append(tunnel)
    started.endpoints.append(endpoint)


def _denied(credential: Credential, index: int, what: str) -> ApiError:
    return ApiError(
        Code.AGENT_BIND_DENIED,
        f"endpoints[{index}]: the ACL of the credential {credential.id!r} does not allow "
        f"binding {what}; add a bind rule for it (PATCH /credentials/{{id}}) or connect with "
        "another credential.",
        field=f"endpoints.{index}",
        credential_id=credential.id,
    )


_END_ENDPOINTS = Query(
    delete(Endpoint).where(col(Endpoint.tunnel_session_id) == bindparam("session_id"))
)
_END_TUNNELS = Query(delete(Tunnel).where(col(Tunnel.tunnel_session_id) == bindparam("session_id")))


async def end(unit: Unit, session: TunnelSession) -> None:
    """Remove the session with its tunnels and endpoints, as when its agent goes away."""
    await unit.exec(_END_ENDPOINTS, {"session_id": session.id})
    await unit.exec(_END_TUNNELS, {"session_id": session.id})
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
