"""Fixture rows: the model rows of a checked plan's direct items, with the values derived
from what they name (endpoint metadata and public URL, a session's edge)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

from sqlmodel import SQLModel

from models import (
    ApplicationSession,
    ApplicationUser,
    Edge,
    EdgeRoute,
    Endpoint,
    EndpointConfiguration,
    EventSource,
    EventSubscription,
    ReservedAddr,
    TlsCertificate,
    Tunnel,
    TunnelGroupBackend,
)
from tunnelgw import fixture_plan, timefmt
from tunnelgw.fixture_plan import Fact, Item, Plan, parse_time

SESSION_LIFETIME = timedelta(hours=24)


def _described(item: Item, data: dict[str, Any], account: str) -> dict[str, Any]:
    return {
        "id": item.id,
        "account_id": account,
        "description": data.get("description", ""),
        "meta": data.get("metadata", ""),
    }


def phase1_rows(plan: Plan, account: str) -> Iterator[SQLModel]:
    for item in plan.items:
        if item.section not in fixture_plan.PHASE1:
            continue
        data = plan.resolve(item.data)
        common = _described(item, data, account)
        if item.section == "tunnels":
            yield Tunnel.new(**common)
        elif item.section == "tunnel_group_backends":
            yield TunnelGroupBackend.new(**common, labels=data.get("labels", {}))
        elif item.section == "tls_certificates":
            yield TlsCertificate.new(**common, **_certificate(data.get("certificate_pem", "")))
        elif item.section == "endpoint_configurations":
            yield EndpointConfiguration.new(**common, type=data.get("type", "https"))
        elif item.section == "edges":
            yield Edge.new(
                **common, kind=data["kind"], hostports=data.get("hostports", []), **_module(data)
            )
        elif item.section == "edge_routes":
            yield EdgeRoute.new(**common, edge_id=data["edge_id"], match=data.get("match", "/"))
        elif item.section == "reserved_addrs":
            yield ReservedAddr.new(**common, addr=data["addr"], region=data.get("region", "us"))
        elif item.section == "event_subscriptions":
            yield EventSubscription.new(**common)
            for event_type in data.get("sources", []):
                yield EventSource.new(
                    subscription_id=common["id"], type=event_type, account_id=account
                )


def _certificate(pem: str) -> dict[str, Any]:
    if not pem:
        return {}
    from cryptography import x509
    from cryptography.hazmat.primitives.serialization import Encoding

    cert = x509.load_pem_x509_certificate(pem.encode("utf-8"))
    return {
        "certificate_pem": cert.public_bytes(Encoding.PEM).decode("ascii"),
        "not_after": cert.not_valid_after_utc.replace(microsecond=0),
    }


def _module(data: dict[str, Any]) -> dict[str, Any]:
    backend = data.get("backend")
    if backend is None:
        return {}
    return {"backend_id": backend["backend_id"], "backend_enabled": backend.get("enabled", True)}


def phase3_rows(plan: Plan, account: str) -> list[SQLModel]:
    now = timefmt.utcnow()
    rows: list[SQLModel] = []
    for item in plan.items:
        if item.section not in fixture_plan.PHASE3:
            continue
        data = plan.resolve(item.data)
        times = {k: parse_time(data[k]) or now for k in fixture_plan.TIME_FIELDS if k in data}
        created = times.get("created_at", now)
        base: dict[str, Any] = {"id": item.id, "account_id": account, "created_at": created}
        if item.section == "endpoints":
            rows.append(_endpoint(plan, item, data, base))
        elif item.section == "application_users":
            provider = data.get("identity_provider", {})
            rows.append(
                ApplicationUser.new(
                    **base,
                    identity_provider_name=provider.get("name", ""),
                    identity_provider_url=provider.get("url", ""),
                    provider_user_id=data.get("provider_user_id", ""),
                    username=data.get("username", ""),
                    email=data.get("email", ""),
                    name=data.get("name", ""),
                    last_active=times.get("last_active", created),
                    last_login=times.get("last_login", created),
                )
            )
        elif item.section == "application_sessions":
            endpoint = plan.fact(item.data["endpoint_id"])
            rows.append(
                ApplicationSession.new(
                    **base,
                    public_url=data.get("public_url", endpoint.public_url),
                    browser_session=browser_session(data.get("browser_session", {})),
                    application_user_id=data["application_user_id"],
                    endpoint_id=data["endpoint_id"],
                    edge_id=endpoint.edge_id,
                    route_id=data.get("route_id"),
                    last_active=times.get("last_active", created),
                    expires_at=times.get("expires_at", now + SESSION_LIFETIME),
                )
            )
    return rows


ENDPOINT_FIELDS = (
    "name",
    "description",
    "upstream_url",
    "upstream_protocol",
    "traffic_policy",
    "bindings",
    "pooling_enabled",
    "principal_id",
    "tunnel_session_id",
)


def _endpoint(plan: Plan, item: Item, data: dict[str, Any], base: dict[str, Any]) -> Endpoint:
    serving = item.data.get("tunnel_id") or item.data.get("edge_id")
    if "metadata" in data:
        meta = str(data["metadata"])
    else:
        meta = plan.fact(serving).meta if isinstance(serving, str) else ""
    given = {name: data[name] for name in ENDPOINT_FIELDS if name in data}
    return Endpoint.new(
        **base,
        updated_at=base["created_at"],
        region=data.get("region", "us"),
        proto=data["proto"],
        hostport=data["hostport"],
        public_url=public_url(data),
        type=data["type"],
        reserved_domain_id=data.get("domain_id"),
        reserved_addr_id=data.get("tcp_addr_id"),
        tunnel_id=data.get("tunnel_id"),
        edge_id=data.get("edge_id"),
        meta=meta,
        **given,
    )


def browser_session(given: dict[str, Any]) -> dict[str, Any]:
    """A BrowserSession with every field present (`""` / 0 where the file gives none)."""
    agent = given.get("user_agent", {})
    location = given.get("location", {})
    agent_keys = ("raw", "browser_name", "browser_version", "device_type", "os_name")
    return {
        "user_agent": {k: agent.get(k, "") for k in (*agent_keys, "os_version")},
        "ip_address": given.get("ip_address", ""),
        "location": {
            "country_code": location.get("country_code", ""),
            "latitude": location.get("latitude", 0),
            "longitude": location.get("longitude", 0),
            "lat_long_radius_km": location.get("lat_long_radius_km", 0),
        },
    }


def public_url(data: dict[str, Any]) -> str:
    """An endpoint's `public_url`: given, or `<proto>://<hostport>` without a default port."""
    if "public_url" in data:
        return str(data["public_url"])
    proto, hostport = data["proto"], data["hostport"]
    host, _, port = hostport.rpartition(":")
    default = {"http": "80", "https": "443"}.get(proto)
    return f"{proto}://{host if port == default else hostport}"


def file_facts(plan: Plan) -> dict[str, Fact]:
    """The facts of the file's own direct items, by id."""
    facts: dict[str, Fact] = {}
    for item in plan.items:
        if item.is_api or item.id is None:
            continue
        data = item.data
        edge = data.get("edge_id")
        facts[item.id] = Fact(
            item.kind,
            meta=str(data.get("metadata", "")),
            public_url=public_url(data) if item.section == "endpoints" else "",
            edge_id=plan.ref_id(edge) if isinstance(edge, str) else None,
        )
    return facts
