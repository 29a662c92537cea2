"""Schemathesis hooks: teach the generator the constraints the spec declares as extensions
because OpenAPI 3.0 cannot express them.

- `x-max-bytes`, `x-key-pattern` (any property) and `x-check: <rule>` (a request schema's
  cross-field rule, e.g. `valid_until` later than `valid_after`): a positive (valid-by-schema)
  case that breaks one is not valid input; it is dropped, not sent.
- `x-format: <format>` (a string property holding a certificate, an SSH key, an address
  list or an ACL rule, also as the items of an array): random strings essentially never
  parse, so dropping would leave no positive case; a positive case whose value fails the
  format's check gets the property's `example` (a real certificate, key or list) instead,
  and the rest of the generated body is kept.
- `x-path-param: <name>` (a body field repeating a path parameter, as client libraries send
  it): a positive case gets the path parameter's value there.
- A positive case's `filter` query parameter becomes a valid expression (random text is
  almost never one).
- A positive reserved-domain create gets a random first label on its domain, since a domain
  is reserved once across the server (see `_fresh_domain`).
- A positive cloud endpoint create or update gets a fresh `.internal` https URL and no
  `bindings` (see `_fresh_endpoint_url`).
- A positive event destination body whose `target` breaks the cross-field rules (not exactly
  one kind, AWS auth not exactly one method, the credential empty) gets the `EventTarget`
  example instead: random objects almost never set exactly one kind.
- A positive case with a comma inside an item of a comma-separated query array is dropped
- A positive simulated-agent connect (`POST /_admin/agent_sessions`) carries the authtoken of
  a credential made for it just before: a generated token is never a credential's, and the
  admin run's resets remove the seeded credential (tests/contract/seed.py), after which
  every connect would be refused before its logic: 403 for each, and when no connect had
  passed before the first reset, the run failed on Schemathesis's warning that the
  operation answered only 401/403.
- A positive disconnect (`DELETE /_admin/agent_sessions/{id}`) ends a session connected for
  it just before (with a credential made for it), so each case reaches a live session: the
  admin run's resets remove seeded sessions and credentials alike.
  (`_comma_in_delimited_item`).
- A positive IP restriction of type `api` restricts the dashboard instead (see
  `before_call`): the run must not lock its own account out of the API.
- A positive secret create that names its vault by both `vault_id` and `vault_name` keeps
  only the id, and one that names none names the seeded vault (see `_one_vault`): a
  generated name never names the same vault.
- No case deletes the run's own API key (`TUNNELGW_CONTRACT_OWN_KEY`): the stateful phase
  infers a link from `GET /api_keys` to `DELETE /api_keys/{id}` with any listed key (the
  served spec's named schemas tell it that `keys` are API keys), and once the run's own key
  is gone every later request is 401.

Both run the same pure checks as the server (`tunnelgw.http.validation`, `tunnelgw.crypto`).
Negative cases are left alone, so the server's rejection of such bodies is still tested.
"""

from __future__ import annotations

import functools
import os
import secrets
from collections.abc import Callable
from typing import Any
from urllib.parse import unquote

import schemathesis

from tests.contract import seed
from tunnelgw.core import settings, timefmt
from tunnelgw.core.errors import ApiError
from tunnelgw.core.spec import load as load_spec
from tunnelgw.crypto import CryptoError, Rule, issuing, ssh, tls, x509
from tunnelgw.handlers import access_tokens, tls_edge_backend
from tunnelgw.http.validation import check_extensions
from tunnelgw.models.event_source import check_fields
from tunnelgw.rules import (
    acls,
    certmanagement,
    cidrs,
    event_targets,
    hostnames,
    reserved_names,
    traffic_policy,
)
from tunnelgw.services import listing, vaults


def _tls_part(field: str, chain: str, key: str) -> None:
    """The server's check of one part of a TLS certificate upload: raises CryptoError when
    that part (`field`) is at fault, whatever the other part is."""
    try:
        tls.parse_tls_certificate(chain, key)
    except CryptoError as exc:
        if exc.field == field and exc.rule is not Rule.PRIVATE_KEY_MISMATCH:
            raise


def _valid_or_raise(checked: str | None) -> str:
    """A rule that answers None for an invalid value, as a check that raises."""
    if checked is None:
        raise CryptoError(Rule.INVALID_FIELD, "invalid")
    return checked


# `x-format` name -> the server's check of one value (raises CryptoError when invalid).
FORMATS: dict[str, Callable[[str], object]] = {
    "x509-ca-pem": x509.parse_ca,
    "csr-pem": issuing.load_request,
    "endpoint-selector": lambda value: listing.compile_for(value, "Endpoint"),
    "ssh-public-key": ssh.parse_user_public_key,
    "source-address": lambda value: ssh.critical_options({"source-address": value}),
    "tls-certificate-chain": lambda value: _tls_part("certificate_pem", value, ""),
    # Checked against a valid chain, so the key's own rules are the ones that apply.
    "tls-private-key": lambda value: _tls_part("private_key_pem", _example_chain(), value),
    "cidr": cidrs.canonical,
    "acl-rule": lambda value: acls.checked([value]),
    "traffic-policy": traffic_policy.parse,
    "ssh-host-principal": lambda value: _valid_or_raise(hostnames.ssh_host_principal(value)),
    "abuse-url": lambda value: _valid_or_raise(hostnames.url_hostname(value)),
}


def _reserved_domain_create(body: dict[str, Any]) -> None:
    reserved_names.requested(body.get("name"), body.get("domain"), settings.current())
    certmanagement.check_exclusive(body)


# `x-check` name -> the server's cross-field check of a body (raises CryptoError).
CHECKS: dict[str, Callable[[dict[str, Any]], object]] = {
    "ssh-ca-key-spec": lambda body: ssh.ca_key_spec(
        body.get("private_key_type"), body.get("elliptic_curve"), body.get("key_size")
    ),
    "vault-secret-vault": vaults.requested_vault,
    "ssh-validity": lambda body: ssh.validity(
        body.get("valid_after"), body.get("valid_until"), timefmt.utcnow()
    ),
    "ssh-host-validity": lambda body: ssh.validity(
        body.get("valid_after"),
        body.get("valid_until"),
        timefmt.utcnow(),
        ssh.DEFAULT_HOST_VALIDITY,
    ),
    "reserved-domain-create": lambda body: _reserved_domain_create(body),
    "access-token-expiry": lambda body: access_tokens.expiry(body.get("expires_at")),
    "reserved-domain-certificate": certmanagement.check_exclusive,
    "tls-certificate": lambda body: tls.parse_tls_certificate(
        body["certificate_pem"], body["private_key_pem"]
    ),
    "tls-edge-backend-form": tls_edge_backend.requested_module,
    # Only the traffic event types' sources choose `fields`.
    "event-source-fields": lambda body: check_fields(body, "fields"),
    "event-subscription-sources": lambda body: [
        check_fields(source, "sources") for source in body.get("sources") or ()
    ],
    # Checked on the body as map_case sends it (a broken target replaced: `_event_target`).
    "event-destination-create": lambda body: event_targets.check_create(_event_target(body, True)),
    "event-destination-update": lambda body: event_targets.check_update(_event_target(body)),
}


@functools.cache
def _example_target() -> dict[str, Any]:
    """The spec's example event target (a valid one)."""
    spec = load_spec()
    target: dict[str, Any] = spec["components"]["schemas"]["EventTarget"]["example"]
    return target


def _event_target(body: dict[str, Any], required: bool = False) -> dict[str, Any]:
    """An event destination body whose `target`, when given (and on create), passes the
    server's cross-field rules with its credential set; else the body with the example."""
    target = body.get("target")
    if target is None and not required:
        return body
    try:
        event_targets.require_credential(event_targets.checked_target(target or {}))
    except ApiError:
        return {**body, "target": _example_target()}
    return body


@functools.cache
def _example_chain() -> str:
    """The spec's example chain (a valid one, to check a generated key against)."""
    spec = load_spec()
    chain: str = spec["components"]["schemas"]["TlsCertificateCreate"]["properties"][
        "certificate_pem"
    ]["example"]
    return chain


def _resolve(node: Any, root: dict[str, Any]) -> Any:
    if isinstance(node, dict) and "$ref" in node:
        target: Any = root
        for part in node["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        return _resolve(target, root)
    return node


def _body_schema(case: Any) -> dict[str, Any] | None:
    root = case.operation.schema.raw_schema
    body = case.operation.definition.raw.get("requestBody")
    if not body:
        return None
    schema = _resolve(body["content"]["application/json"]["schema"], root)
    props = {name: _resolve(prop, root) for name, prop in schema.get("properties", {}).items()}
    return {**schema, "properties": props}


def _comma_in_delimited_item(case: Any) -> bool:
    """Whether an item of a non-exploded (comma-separated) query array holds a comma: the
    spec sends such values through the exploded twin (`urls`: "a URL with a comma needs
    `url`"), and Schemathesis has sent the comma unencoded, which makes it a separator (the
    server's handling of an encoded `%2C` is tested in tests/api/test_list_filters.py)."""
    if not isinstance(case.query, dict):
        return False
    root = case.operation.schema.raw_schema
    for raw in case.operation.definition.raw.get("parameters", []):
        param = _resolve(raw, root)
        value = case.query.get(param.get("name"))
        delimited = param.get("in") == "query" and param.get("explode") is False
        if delimited and isinstance(value, list) and any("," in str(v) for v in value):
            return True
    return False


# The API key whose token the run sends (tests/contract/test_schemathesis.py sets it).
OWN_KEY = os.environ.get("TUNNELGW_CONTRACT_OWN_KEY", "")
TOKEN = os.environ.get("TUNNELGW_CONTRACT_TOKEN", "")


def _client(base_url: str) -> Any:
    """An HTTP client of the run's account (its API key's token)."""
    import httpx

    headers = {"Authorization": f"Bearer {TOKEN}", "Service-Version": "2"}
    return httpx.Client(base_url=base_url, headers=headers, timeout=10, trust_env=False)


def _new_authtoken(http: Any) -> str:
    """The authtoken of a new tunnel credential of the run's account ("" if none was made)."""
    credential = http.post("/credentials", json={})
    return str(credential.json()["token"]) if credential.status_code == 201 else ""


def _live_session(base_url: str) -> str:
    """A new simulated agent's session of the run's account (its id, "" if none could be
    made): a credential, then a connect with its token."""
    with _client(base_url) as http:
        authtoken = _new_authtoken(http)
        if not authtoken:
            return ""
        agent = http.post("/_admin/agent_sessions", json={"authtoken": authtoken})
        return str(agent.json()["tunnel_session"]["id"]) if agent.status_code == 201 else ""


def _base_url(case: Any) -> str:
    return str(case.operation.base_url or case.operation.schema.get_base_url())


def _connect_authtoken(case: Any) -> str:
    """The authtoken a positive agent connect sends: a new credential's, else (no run token,
    or the credential was refused) the seeded one's."""
    if TOKEN:
        with _client(_base_url(case)) as http:
            authtoken = _new_authtoken(http)
        if authtoken:
            return authtoken
    return seed.AGENT_TOKEN


def _deletes_own_key(case: Any) -> bool:
    return (
        bool(OWN_KEY)
        and case.method.upper() == "DELETE"
        and case.operation.path == "/api_keys/{id}"
        and (case.path_parameters or {}).get("id") == OWN_KEY
    )


@schemathesis.hook
def filter_case(context: Any, case: Any) -> bool:
    if _deletes_own_key(case):
        return False
    meta = case.meta
    if meta is None or not meta.generation.mode.is_positive:
        return True
    if _comma_in_delimited_item(case):
        return False
    if not isinstance(case.body, dict):
        return True
    schema = _body_schema(case)
    if schema is None:
        return True
    # The body as map_case (which runs after the filters) will send it.
    body = _with_formats(schema, case.body, case.operation.schema.raw_schema)
    try:
        check_extensions(schema, body)
        if "x-check" in schema:
            CHECKS[schema["x-check"]](body)
    except (ApiError, CryptoError):
        return False
    return True


def _valid(fmt: str, value: str) -> bool:
    try:
        FORMATS[fmt](value)
    except (CryptoError, cidrs.CidrError, ApiError):
        return False
    return True


def _with_formats(schema: Any, value: Any, root: dict[str, Any]) -> Any:
    """`value` with each `x-format` string that fails its check replaced by the example (in
    objects and in arrays: an ACL's rules)."""
    schema = _resolve(schema, root)
    if isinstance(value, dict):
        props = schema.get("properties", {})
        return {k: _with_formats(props[k], v, root) if k in props else v for k, v in value.items()}
    if isinstance(value, list) and "items" in schema:
        return [_with_formats(schema["items"], item, root) for item in value]
    fmt = schema.get("x-format")
    if fmt is not None and isinstance(value, str) and not _valid(fmt, value):
        return schema["example"]
    return value


# A filter every list's items accept (all have `uri`): random text is almost never one.
VALID_FILTER = 'obj.uri != ""'


@schemathesis.hook
def map_case(context: Any, case: Any) -> Any:
    meta = case.meta
    if meta is None or not meta.generation.mode.is_positive:
        return case
    if isinstance(case.query, dict) and "filter" in case.query:
        case.query = {**case.query, "filter": _valid_filter(case.query["filter"])}
    if not isinstance(case.body, dict):
        return case
    schema = _body_schema(case)
    if schema is not None:
        case.body = _with_path_echoes(schema, case)
        case.body = _with_formats(schema, case.body, case.operation.schema.raw_schema)
        case.body = _operator_binding(schema, case.body)
        if schema.get("x-check") == "reserved-domain-create":
            case.body = _fresh_domain(case.body)
        case.body = _fresh_endpoint_url(case)
        case.body = _event_destination(schema, case.body)
    return case


def _event_destination(schema: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
    """An event destination body with a target the server's rules accept (`_event_target`)."""
    check = schema.get("x-check")
    if check == "event-destination-create":
        return _event_target(body, True)
    if check == "event-destination-update":
        return _event_target(body)
    return body


def _valid_filter(value: Any) -> Any:
    """A positive case's `filter`: kept when it is a valid filter of any list, else one that is
    (a schema-valid string is rarely a valid expression; the server's 400s for those are
    tested by tests/api/test_list_filters.py)."""
    try:
        listing.compile_for(str(value), "ApiKey")
    except ApiError:
        return VALID_FILTER
    return VALID_FILTER if "obj." in str(value) else value


def _with_path_echoes(schema: dict[str, Any], case: Any) -> dict[str, Any]:
    """A positive body whose fields repeating a path parameter (`x-path-param`) carry that
    parameter's value: any other value is invalid input (400), which the schema cannot say."""
    body = dict(case.body)
    for name, prop in schema.get("properties", {}).items():
        param = prop.get("x-path-param")
        if param is not None and body.get(name) is not None:
            value = (case.path_parameters or {}).get(param)
            # Path parameters may be held percent-encoded; the server compares decoded values.
            body[name] = unquote(value) if isinstance(value, str) else value
    return body


@schemathesis.hook
def before_call(context: Any, case: Any, kwargs: Any) -> None:
    """The fix-ups of `map_case` once more right before sending, for the phases whose cases
    do not pass through it (explicit examples, coverage, stateful links that fill `id` from
    another response): on a positive case, fields repeating a path parameter carry its
    value, `filter` is a valid expression, a TLS edge backend body is not flat and wrapped
    at once, a reserved-domain create names a domain (a stateful link may fill only
    `certificate_id`), and an event destination's target is one the server accepts."""
    meta = case.meta
    if meta is not None and not meta.generation.mode.is_positive:
        return
    if isinstance(case.query, dict) and "filter" in case.query:
        case.query = {**case.query, "filter": _valid_filter(case.query["filter"])}
    if case.operation.path == "/_admin/agent_sessions/{id}" and TOKEN:
        session = _live_session(_base_url(case))
        if session:
            case.path_parameters = {**(case.path_parameters or {}), "id": session}
    if not isinstance(case.body, dict):
        return
    schema = _body_schema(case)
    if schema is None:
        return
    case.body = _operator_binding(schema, _with_path_echoes(schema, case))
    if case.operation.path == "/_admin/agent_sessions" and "authtoken" in case.body:
        case.body = {**case.body, "authtoken": _connect_authtoken(case)}
    flat = any(case.body.get(name) is not None for name in ("enabled", "backend_id"))
    wrapped = case.body.get("module") is not None
    if schema.get("x-check") == "tls-edge-backend-form" and flat and wrapped:
        case.body = {k: v for k, v in case.body.items() if k != "module"}
    if schema.get("x-check") == "reserved-domain-create" and not (
        case.body.get("name") or case.body.get("domain")
    ):
        case.body = _fresh_domain({**case.body, "domain": "example.com"})
    case.body = _fresh_endpoint_url(case)
    case.body = _event_destination(schema, case.body)
    if case.body.get("type") == "api" and "ip_policy_ids" in schema.get("properties", {}):
        # An `api` IP restriction could lock the run's account out of its own API (the
        # generated policies rarely allow 127.0.0.1): its behaviour is tested by
        # tests/api/test_ip_restrictions.py; here the same body restricts the dashboard.
        case.body = {**case.body, "type": "dashboard"}
    if schema.get("x-check") == "vault-secret-vault":
        case.body = _one_vault(case.body)


def _one_vault(body: dict[str, Any]) -> dict[str, Any]:
    """A positive secret create naming its vault once: a vault named twice must be named the
    same (else 400 ERR_CONFLICTING_FIELDS, tested by tests/api/test_vault_secrets.py), so the
    seeded `vault_id` stays and a generated `vault_name` goes; a case naming none (an
    explicit example) names the seeded vault."""
    if body.get("vault_id") and body.get("vault_name"):
        return {**body, "vault_name": None}
    if not body.get("vault_id") and not body.get("vault_name"):
        return {**body, "vault_name": seed.VAULT_NAME}
    return body


def _operator_binding(schema: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
    """A Kubernetes operator body (create or PATCH) whose binding and `bindings` feature go
    together whatever the operator had before: a binding, or the feature, brings the other,
    with a CSR (the example) when it has none. Otherwise the server's 400s
    (ERR_BINDING_NOT_ALLOWED, ERR_BINDING_REQUIRED) depend on the stored operator, which the
    schema cannot say; tests/api/test_kubernetes_operators.py tests them."""
    props = schema.get("properties", {})
    if not {"binding", "enabled_features"} <= set(props):
        return body
    features = body.get("enabled_features") or []
    binding = body.get("binding")
    if binding is None and "bindings" not in features:
        return body
    binding = dict(binding or {})
    if not binding.get("csr"):
        binding["csr"] = props["binding"]["properties"]["csr"]["example"]
    features = [*features, *([] if "bindings" in features else ["bindings"])]
    return {**body, "enabled_features": features, "binding": binding}


def _fresh_domain(body: dict[str, Any]) -> dict[str, Any]:
    """A reserved-domain create body whose domain gets a random first label (after `*.`).

    A domain is reserved once across the server, and the generator draws the same short
    names again and again; without this nearly every create after the first few is 409, and
    the operations linked from a create are seldom reached. The domain stays where it was
    (a subdomain of the shared domain stays one, a wildcard stays a wildcard).
    """
    try:
        domain = reserved_names.requested(body.get("name"), body.get("domain"), settings.current())
    except ApiError:
        return body  # filtered out, or a case the server must refuse as it is
    star, rest = ("*.", domain[2:]) if domain.startswith("*.") else ("", domain)
    fresh = f"{star}u{secrets.token_hex(6)}.{rest}"
    if len(fresh) > hostnames.MAX_LENGTH:
        return body
    return {**body, **{key: fresh for key in ("name", "domain") if body.get(key)}}


ENDPOINT_WRITES = frozenset({"endpoints.create", "endpoints.update"})


def _fresh_endpoint_url(case: Any) -> dict[str, Any]:
    """A positive cloud endpoint create or update body with a fresh `https://<random>.internal`
    URL and no `bindings`: a generated URL almost never names a reserved domain of the run's
    account (400), and one URL taken twice is 409 (the URL rules are tested by
    tests/api/test_cloud_endpoints.py). The seeded endpoints the updates use are https."""
    body: dict[str, Any] = case.body
    if case.operation.definition.raw.get("operationId") not in ENDPOINT_WRITES:
        return body
    if case.operation.definition.raw["operationId"] == "endpoints.update" and not body.get("url"):
        return {k: v for k, v in body.items() if k != "bindings"}
    fresh = f"https://u{secrets.token_hex(6)}.internal"
    return {**{k: v for k, v in body.items() if k != "bindings"}, "url": fresh}
