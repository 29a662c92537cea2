"""Fixture rows: the model rows of a checked plan's direct items, with the values derived
from what they name (endpoint metadata and public URL, a session's edge)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
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
from models.tls_certificate import certificate_columns
from tunnelgw import fixture_plan, timefmt
from tunnelgw.crypto import tls
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
    served = _served_endpoints(plan)
    for item in plan.items:
        if item.section not in fixture_plan.PHASE1:
            continue
        data = plan.resolve(item.data)
        common = _described(item, data, account)
        if item.section == "tunnels":
            yield _tunnel(common, data, served.get(common["id"]))
        elif item.section == "tunnel_group_backends":
            yield TunnelGroupBackend.new(**common, labels=data.get("labels", {}))
        elif item.section == "tls_certificates":
            yield TlsCertificate.new(**common, **_certificate(data["certificate_pem"]))
        elif item.section == "endpoint_configurations":
            yield EndpointConfiguration.new(**common, type=data.get("type", "https"))
        elif item.section == "edges":
            yield Edge.new(
                **common, kind=data["kind"], hostports=data.get("hostports", []), **_module(data)
            )
        elif item.section == "edge_routes":
            yield EdgeRoute.new(
                **common,
                edge_id=data["edge_id"],
                match_type=data.get("match_type", "path_prefix"),
                match=data.get("match", "/"),
                **_module(data),
            )
        elif item.section == "reserved_addrs":
            host, port = fixture_plan.addr_key(data["addr"])
            yield ReservedAddr.new(**common, host=host, port=port, region=data.get("region", "us"))
        elif item.section == "event_subscriptions":
            yield EventSubscription.new(**common)
            for event_type in data.get("sources", []):
                yield EventSource.new(
                    subscription_id=common["id"], type=event_type, account_id=account
                )


def _served_endpoints(plan: Plan) -> dict[str, Item]:
    """The first endpoint item of the file naming each tunnel, by tunnel id."""
    served: dict[str, Item] = {}
    for item in plan.section("endpoints"):
        tunnel = item.data.get("tunnel_id")
        if isinstance(tunnel, str):
            served.setdefault(plan.ref_id(tunnel), item)
    return served


def _tunnel(common: dict[str, Any], data: dict[str, Any], endpoint: Item | None) -> Tunnel:
    """A tunnel row; what the file leaves out comes from the first endpoint naming it."""
    served = endpoint.data if endpoint is not None else {}
    derived = {
        "public_url": public_url(served) if served.keys() & {"hostport", "public_url"} else "",
        "proto": served.get("proto", "https"),
        "region": served.get("region", "us"),
    }
    return Tunnel.new(
        **common,
        **{name: data.get(name, value) for name, value in derived.items()},
        started_at=parse_time(data["started_at"]) if "started_at" in data else timefmt.utcnow(),
        labels=data.get("labels", {}),
        forwards_to=data.get("forwards_to", ""),
        endpoint_id=endpoint.id if endpoint is not None else None,
    )


def _certificate(pem: str) -> dict[str, Any]:
    """The columns of a fixture certificate (checked by fixture_plan.pem_problem)."""
    from cryptography import x509
    from cryptography.hazmat.primitives.serialization import Encoding

    cert = x509.load_pem_x509_certificate(pem.encode("utf-8"))
    return {
        "certificate_pem": cert.public_bytes(Encoding.PEM).decode("ascii"),
        **certificate_columns(tls.certificate_fields(cert)),
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
            row = _endpoint(plan, item, data, base)
            # Sessions (later in the plan) take the endpoint's public URL.
            plan.facts[row.id] = replace(plan.facts[row.id], public_url=row.public_url)
            rows.append(row)
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
                    edge_id=plan.ref_id(endpoint.edge_id) if endpoint.edge_id else None,
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
    if "hostport" not in data:  # the address of its reserved TCP address
        data = {**data, "hostport": plan.fact(item.data["tcp_addr_id"]).addr}
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
        endpoint = item.section == "endpoints" and "hostport" in data
        facts[item.id] = Fact(
            item.kind,
            meta=str(data.get("metadata", "")),
            public_url=public_url(data) if endpoint else "",
            edge_id=plan.key(edge) if isinstance(edge, str) else None,
            addr=str(data.get("addr", "")),
        )
    return facts
