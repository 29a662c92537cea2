"""A checked fixture file: its items in load order, labels with their kinds and ids, and
every rule that needs no database (labels, PEM, event types, ports, times, field pairs)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from cryptography import x509

from models import (
    AgentIngress,
    ApiKey,
    ApplicationSession,
    ApplicationUser,
    CertificateAuthority,
    Edge,
    EdgeRoute,
    Endpoint,
    EndpointConfiguration,
    EventSubscription,
    HttpResponseBackend,
    ReservedAddr,
    ReservedDomain,
    SshCertificateAuthority,
    SshUserCertificate,
    TlsCertificate,
    Tunnel,
    TunnelGroupBackend,
)
from models.edge import KIND_PREFIXES
from tunnelgw import ids
from tunnelgw.crypto import CryptoError, tls
from tunnelgw.fixture_schema import Document, Issue, Path_

# Direct sections, in load order: phase 1 before the api sections, phase 3 after them.
PHASE1 = (
    "tunnels",
    "tunnel_group_backends",
    "tls_certificates",
    "endpoint_configurations",
    "edges",
    "edge_routes",
    "reserved_addrs",
    "event_subscriptions",
)
PHASE3 = ("endpoints", "application_users", "application_sessions")
# api section -> (collection path of its create operation, kind)
API_SECTIONS = {
    "reserved_domains": ("/reserved_domains", "reserved_domain"),
    "agent_ingresses": ("/agent_ingresses", "agent_ingress"),
    "http_response_backends": ("/backends/http_response", "http_response_backend"),
    "certificate_authorities": ("/certificate_authorities", "certificate_authority"),
    "ssh_certificate_authorities": ("/ssh_certificate_authorities", "ssh_certificate_authority"),
    "ssh_user_certificates": ("/ssh_user_certificates", "ssh_user_certificate"),
    "api_keys": ("/api_keys", "api_key"),
    "tls_certificates": ("/tls_certificates", "tls_certificate"),
    "tunnel_group_backends": ("/backends/tunnel_group", "tunnel_group_backend"),
    "event_subscriptions": ("/event_subscriptions", "event_subscription"),
    "reserved_addrs": ("/reserved_addrs", "reserved_addr"),
    "tls_edges": ("/edges/tls", "tls_edge"),
}
EDGES = frozenset({"https_edge", "tcp_edge", "tls_edge"})
KIND_MODELS: dict[str, Any] = {
    "tunnel": Tunnel,
    "tunnel_group_backend": TunnelGroupBackend,
    "tls_certificate": TlsCertificate,
    "endpoint_configuration": EndpointConfiguration,
    **dict.fromkeys(EDGES, Edge),
    "edge_route": EdgeRoute,
    "reserved_addr": ReservedAddr,
    "event_subscription": EventSubscription,
    "endpoint": Endpoint,
    "application_user": ApplicationUser,
    "application_session": ApplicationSession,
    "reserved_domain": ReservedDomain,
    "agent_ingress": AgentIngress,
    "http_response_backend": HttpResponseBackend,
    "certificate_authority": CertificateAuthority,
    "ssh_certificate_authority": SshCertificateAuthority,
    "ssh_user_certificate": SshUserCertificate,
    "api_key": ApiKey,
}
# Fields whose value names a resource of a known kind: (section, *field path) -> kinds.
REF_FIELDS: dict[tuple[str, ...], frozenset[str]] = {
    ("edges", "backend", "backend_id"): frozenset({"tunnel_group_backend"}),
    ("edge_routes", "edge_id"): frozenset({"https_edge"}),
    ("edge_routes", "backend", "backend_id"): frozenset({"tunnel_group_backend"}),
    ("endpoints", "tunnel_id"): frozenset({"tunnel"}),
    ("endpoints", "edge_id"): EDGES,
    ("endpoints", "domain_id"): frozenset({"reserved_domain"}),
    ("endpoints", "tcp_addr_id"): frozenset({"reserved_addr"}),
    ("application_sessions", "application_user_id"): frozenset({"application_user"}),
    ("application_sessions", "endpoint_id"): frozenset({"endpoint"}),
    ("application_sessions", "edge_id"): EDGES,
    ("application_sessions", "route_id"): frozenset({"edge_route"}),
    ("api.reserved_domains", "certificate_id"): frozenset({"tls_certificate"}),
    ("api.reserved_domains", "http_endpoint_configuration_id"): frozenset(
        {"endpoint_configuration"}
    ),
    ("api.reserved_domains", "https_endpoint_configuration_id"): frozenset(
        {"endpoint_configuration"}
    ),
    ("api.ssh_user_certificates", "ssh_certificate_authority_id"): frozenset(
        {"ssh_certificate_authority"}
    ),
    ("api.tls_edges", "backend", "backend_id"): frozenset({"tunnel_group_backend"}),
}
# Protocols an edge of each kind serves.
EDGE_PROTOS = {"https_edge": ("http", "https"), "tcp_edge": ("tcp",), "tls_edge": ("tls",)}
TIME_FIELDS = ("created_at", "last_active", "last_login", "expires_at", "started_at")
# Edge kinds with a backend module.
BACKEND_KINDS = ("tls", "tcp")
EVENT_TYPE_PATTERN = re.compile(r"[a-z][a-z0-9_]*\.v0")


def kind_prefix(kind: str) -> str:
    if kind in EDGES:
        return KIND_PREFIXES[kind.removesuffix("_edge")]
    prefix: str = KIND_MODELS[kind].PREFIX
    return prefix


def kind_of_id(value: str, kinds: frozenset[str]) -> str | None:
    """Which of `kinds` the id `value` is, by its prefix."""
    prefix = ids.prefix_of(value)
    return next((k for k in sorted(kinds) if kind_prefix(k) == prefix), None)


@dataclass
class Item:
    """One item of a section; `id` is made up front for direct rows, set by the API for
    api items (`order` is then its place among the api items, else -1)."""

    section: str  # "tunnels", or "api.reserved_domains"
    path: Path_
    data: dict[str, Any]
    kind: str
    order: int = -1
    id: str | None = None
    token: str | None = None  # an api key's token, from its create response

    @property
    def label(self) -> str | None:
        value = self.data.get("ref")
        return value if isinstance(value, str) else None

    @property
    def is_api(self) -> bool:
        return self.order >= 0


@dataclass
class Literal:
    """An existing id named in a direct section, checked against the account on load."""

    value: str
    kind: str
    path: Path_


@dataclass(frozen=True)
class Fact:
    """What later rows copy from a resource they name: metadata (tunnels, edges), the
    public URL (endpoints), the edge (endpoints, routes) and the address (reserved
    addresses)."""

    kind: str
    meta: str = ""
    public_url: str = ""
    edge_id: str | None = None  # a reference key (Plan.key): an api edge may have no id yet
    addr: str = ""


@dataclass
class Plan:
    doc: Document
    items: list[Item] = field(default_factory=list)
    labels: dict[str, Item] = field(default_factory=dict)
    literals: list[Literal] = field(default_factory=list)
    issues: list[Issue] = field(default_factory=list)
    facts: dict[str, Fact] = field(default_factory=dict)  # by id (fixture_rows.file_facts)

    def fact(self, value: str) -> Fact:
        """The facts of the resource a reference (label or id) names."""
        return self.facts[self.ref_id(value)]

    def section(self, name: str) -> list[Item]:
        return [item for item in self.items if item.section == name]

    def api_items(self) -> list[Item]:
        return sorted((i for i in self.items if i.is_api), key=lambda i: i.order)

    def ref_id(self, value: str) -> str:
        """The id a reference stands for: a label's id, or the literal id itself."""
        if value.startswith("@") and not value.startswith("@@"):
            found = self.labels[value[1:]].id
            assert found is not None, value
            return found
        return value

    def key(self, value: str) -> str:
        """What a reference stands for as far as it is known now: the id, or the label
        itself for an api item not created yet (compare references by their keys)."""
        if value.startswith("@") and not value.startswith("@@"):
            return self.labels[value[1:]].id or value
        return value

    def resolve(self, value: Any) -> Any:
        """`value` with every `"@label"` string replaced by the label's id (`"@@x"` is
        the literal `"@x"`)."""
        if isinstance(value, dict):
            return {k: self.resolve(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.resolve(v) for v in value]
        if isinstance(value, str) and value.startswith("@"):
            return value[1:] if value.startswith("@@") else self.ref_id(value)
        return value

    def add(self, path: Path_, message: str, *, at_key: bool = False) -> None:
        self.issues.append(self.doc.issue(path, message, at_key=at_key))


def build(doc: Document, spec: dict[str, Any]) -> Plan:
    """The plan of a schema-valid document; problems are collected in `plan.issues`."""
    plan = Plan(doc)
    _collect(plan)
    for item in plan.items:
        _check_strings(plan, item)
        _check_item(plan, item, spec)
    _check_api_paths(plan, spec)
    return plan


def _collect(plan: Plan) -> None:
    data = plan.doc.data
    for section in PHASE1 + PHASE3:
        for index, entry in enumerate(data.get(section) or []):
            kind = f"{entry['kind']}_edge" if section == "edges" else section_kind(section)
            item = Item(section, (section, index), entry, kind, id=ids.new_id(kind_prefix(kind)))
            _register(plan, item)
    order = 0
    for section, entries in (data.get("api") or {}).items():
        for index, entry in enumerate(entries or []):
            kind = API_SECTIONS[section][1]
            _register(plan, Item(f"api.{section}", ("api", section, index), entry, kind, order))
            order += 1


def section_kind(section: str) -> str:
    kind: str = {
        "tunnels": "tunnel",
        "tunnel_group_backends": "tunnel_group_backend",
        "tls_certificates": "tls_certificate",
        "endpoint_configurations": "endpoint_configuration",
        "edge_routes": "edge_route",
        "reserved_addrs": "reserved_addr",
        "event_subscriptions": "event_subscription",
        "endpoints": "endpoint",
        "application_users": "application_user",
        "application_sessions": "application_session",
    }[section]
    return kind


def _register(plan: Plan, item: Item) -> None:
    plan.items.append(item)
    label = item.label
    if label is None:
        return
    first = plan.labels.get(label)
    if first is not None:
        line, column = plan.doc.positions[(*first.path, "ref")]
        plan.add((*item.path, "ref"), f"label {label!r} is already defined at {line}:{column}")
        return
    plan.labels[label] = item


def _strings(value: Any, path: Path_) -> Iterator[tuple[Path_, str]]:
    if isinstance(value, dict):
        for key, child in value.items():
            yield from _strings(child, (*path, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from _strings(child, (*path, index))
    elif isinstance(value, str):
        yield path, value


def _check_strings(plan: Plan, item: Item) -> None:
    """Every `"@label"` in the item, and every literal id in a field of a known kind."""
    body = {k: v for k, v in item.data.items() if k != "ref"}
    for rel, value in _strings(body, ()):
        path = (*item.path, *rel)
        kinds = REF_FIELDS.get((item.section, *map(str, rel)))
        if value.startswith("@@"):
            continue
        if value.startswith("@"):
            _check_label(plan, item, path, value[1:], kinds)
        elif kinds is not None and not item.is_api:
            _check_literal(plan, path, value, kinds)


def _check_label(
    plan: Plan, item: Item, path: Path_, label: str, kinds: frozenset[str] | None
) -> None:
    target = plan.labels.get(label)
    if target is None:
        plan.add(path, f"unknown label {label!r}")
        return
    if kinds is not None and target.kind not in kinds:
        wanted = " or ".join(sorted(kinds))
        plan.add(path, f"label {label!r} is a {target.kind}; {path[-1]} needs a {wanted}")
        return
    later = item.section in PHASE3 or (item.is_api and target.order < item.order)
    if target.is_api and not later:
        plan.add(
            path,
            f"label {label!r} names an api item, which does not exist yet at this point: "
            "api items are created in file order after the other sections, and only "
            "later api items, endpoints, application_users and application_sessions "
            "can name them",
        )


def _check_literal(plan: Plan, path: Path_, value: str, kinds: frozenset[str]) -> None:
    kind = kind_of_id(value, kinds)
    if kind is None:
        wanted = " or ".join(f"{k} ({kind_prefix(k)}_...)" for k in sorted(kinds))
        plan.add(path, f"{value!r} is not the id of a {wanted}")
        return
    plan.literals.append(Literal(value, kind, path))


def _check_item(plan: Plan, item: Item, spec: dict[str, Any]) -> None:
    data, path = item.data, item.path
    for name in TIME_FIELDS:
        if name in data and parse_time(data[name]) is None:
            plan.add((*path, name), f"{data[name]!r} is not a valid RFC 3339 time")
    for rel, hostport in _hostports(item):
        port = int(hostport.rpartition(":")[2])
        if not 1 <= port <= 65535:
            plan.add((*path, *rel), f"port {port} is outside 1..65535")
    if item.section == "edges" and "backend" in data and data["kind"] not in BACKEND_KINDS:
        plan.add((*path, "backend"), "only tls and tcp edges have a backend module", at_key=True)
    elif item.section == "tls_certificates":
        problem = pem_problem(data["certificate_pem"])
        if problem:
            plan.add((*path, "certificate_pem"), problem)
    elif item.section == "reserved_addrs":
        _check_addr(plan, item)
    elif item.section == "event_subscriptions":
        catalog = event_types(spec)
        for index, name in enumerate(data.get("sources", [])):
            if catalog is not None and name not in catalog:
                plan.add((*path, "sources", index), f"{name!r} is not an event type of the API")
    elif item.section == "endpoints":
        _check_endpoint(plan, item)


def _hostports(item: Item) -> Iterator[tuple[Path_, str]]:
    if item.section == "edges":
        for index, value in enumerate(item.data.get("hostports", [])):
            yield ("hostports", index), value
    elif item.section == "reserved_addrs":
        yield ("addr",), item.data["addr"]
    elif item.section == "endpoints" and "hostport" in item.data:
        yield ("hostport",), item.data["hostport"]


def addr_key(addr: str) -> tuple[str, int]:
    """The (host, port) of a schema-checked `host:port`, host lower-cased."""
    host, _, port = addr.rpartition(":")
    return host.lower(), int(port)


def _check_addr(plan: Plan, item: Item) -> None:
    """A reserved address is reserved once: not twice in one file."""
    key = addr_key(item.data["addr"])
    for other in plan.section("reserved_addrs"):
        if other is item:
            return
        if addr_key(other.data["addr"]) == key:
            line, column = plan.doc.positions[(*other.path, "addr")]
            plan.add((*item.path, "addr"), f"the address is reserved at {line}:{column} already")
            return


def _check_endpoint(plan: Plan, item: Item) -> None:
    data, path = item.data, item.path
    serving, other = ("tunnel_id", "edge_id")
    if data["type"] == "edge":
        serving, other = other, serving
    if data["type"] == "cloud":
        for name in (serving, other):
            if name in data:
                plan.add((*path, name), f"a cloud endpoint has no {name}", at_key=True)
    elif serving not in data:
        plan.add(path, f"an endpoint of type {data['type']} needs {serving}")
    if "hostport" not in data and "tcp_addr_id" not in data:
        plan.add(path, "an endpoint needs hostport, or tcp_addr_id to take its address")
    if data["type"] != "cloud" and other in data:
        plan.add((*path, other), f"an endpoint of type {data['type']} has no {other}", at_key=True)
    edge_kind = reference_kind(plan, data.get("edge_id"), EDGES) if data["type"] == "edge" else None
    if edge_kind is not None and data["proto"] not in EDGE_PROTOS[edge_kind]:
        allowed = " or ".join(EDGE_PROTOS[edge_kind])
        plan.add((*path, "proto"), f"a {edge_kind} serves {allowed}, not {data['proto']}")
    if "tcp_addr_id" in data and data["proto"] != "tcp":
        plan.add((*path, "tcp_addr_id"), "only a tcp endpoint has a tcp_addr", at_key=True)
    if "domain_id" in data and data["proto"] == "tcp":
        plan.add((*path, "domain_id"), "a tcp endpoint has no domain", at_key=True)


def reference_kind(plan: Plan, value: Any, kinds: frozenset[str]) -> str | None:
    """The kind of the resource a reference names (by label or id prefix), if known."""
    if not isinstance(value, str):
        return None
    if value.startswith("@"):
        target = plan.labels.get(value[1:])
        return target.kind if target is not None and target.kind in kinds else None
    return kind_of_id(value, kinds)


def _check_api_paths(plan: Plan, spec: dict[str, Any]) -> None:
    for section, entries in (plan.doc.data.get("api") or {}).items():
        path = API_SECTIONS[section][0]
        if entries and "post" not in spec.get("paths", {}).get(path, {}):
            plan.add(("api", section), f"this server has no POST {path}", at_key=True)


def parse_time(value: str) -> datetime | None:
    """An RFC 3339 time (schema-checked form) as aware UTC whole seconds; None if invalid."""
    try:
        parsed = datetime.fromisoformat(value.replace("z", "Z"))
    except ValueError:
        return None
    return parsed.astimezone(UTC).replace(microsecond=0)


def pem_problem(text: str) -> str | None:
    """Why `text` is not exactly one PEM X.509 certificate a TLS certificate can be made of
    (its fields derived, its key of a supported type); None if it is."""
    labels = re.findall(r"-----BEGIN ([^-\r\n]{1,64})-----", text)
    if labels != ["CERTIFICATE"]:
        found = ", ".join(labels) or "no PEM block"
        return f"must be exactly one PEM CERTIFICATE block (found: {found})"
    try:
        tls.certificate_fields(x509.load_pem_x509_certificate(text.encode("utf-8")))
    except CryptoError as exc:  # a ValueError too
        return exc.msg
    except ValueError:
        return "the CERTIFICATE block is not a valid X.509 certificate"
    return None


def event_types(spec: dict[str, Any]) -> frozenset[str] | None:
    """The spec's `EventType` catalog, or None when the spec has none (then the schema's
    `<name>.v0` pattern is the rule)."""
    schema = spec.get("components", {}).get("schemas", {}).get("EventType", {})
    values = schema.get("enum")
    return frozenset(v for v in values if isinstance(v, str)) if values else None


def check_sessions(plan: Plan) -> None:
    """A session's edge is its endpoint's edge; a route belongs to that (https) edge."""
    for item in plan.section("application_sessions"):
        data, path = item.data, item.path
        endpoint = plan.fact(data["endpoint_id"])
        if "edge_id" in data and plan.key(data["edge_id"]) != endpoint.edge_id:
            served = f"edge {endpoint.edge_id}" if endpoint.edge_id else "a tunnel (no edge)"
            plan.add((*path, "edge_id"), f"the session's endpoint is served by {served}")
        if "route_id" in data:
            route = plan.fact(data["route_id"])
            if endpoint.edge_id is None or route.edge_id != endpoint.edge_id:
                plan.add(
                    (*path, "route_id"),
                    "the route must be a route of the edge that serves the session's endpoint",
                )
