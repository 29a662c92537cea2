"""One error type and one catalog: every failure the API reports is an `ApiError`.

The catalog is the single list of error codes; `openapi.yaml` and docs/errors.md list the same
codes and a test keeps the three in step.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping


class Code(enum.Enum):
    """Stable error codes with their HTTP status and a default message."""

    def __init__(self, status: int, message: str) -> None:
        self.status = status
        self.message = message

    # 400: the request is malformed or a value is invalid.
    INVALID_REQUEST = (400, "The request is not HTTP/1.1 this server can read.")
    INVALID_JSON = (400, "The request body is not valid JSON.")
    INVALID_BODY = (400, "The request body must be a JSON object.")
    MISSING_FIELD = (400, "A required field is missing.")
    UNKNOWN_FIELD = (400, "The request body has a field this operation does not accept.")
    WRONG_TYPE = (400, "A field has the wrong JSON type.")
    FIELD_TOO_LONG = (400, "A field is longer than its limit.")
    INVALID_FIELD = (400, "A field has an invalid value.")
    MISSING_PARAMETER = (400, "A required parameter is missing.")
    INVALID_PARAMETER = (400, "A query, path or header parameter has an invalid value.")
    VERSION_HEADER_MISSING = (
        400,
        "The Service-Version header is required; send 'Service-Version: 2'.",
    )
    VERSION_UNSUPPORTED = (400, "Unsupported Service-Version; this server speaks version 2.")
    # 400: certificates and keys that cannot be used (tunnelgw.crypto.Rule names the same).
    INVALID_PEM = (400, "The value is not PEM.")
    NOT_A_CERTIFICATE = (400, "The PEM holds something other than a certificate.")
    INVALID_CERTIFICATE = (400, "The PEM certificate block is not a valid X.509 certificate.")
    MULTIPLE_CERTIFICATES = (400, "The PEM holds more than one certificate.")
    NOT_A_CA = (400, "The certificate is not a CA certificate (basic constraints CA:TRUE).")
    CHAIN_OUT_OF_ORDER = (
        400,
        "The certificate chain is not in order: the leaf first, then each certificate's issuer.",
    )
    INVALID_PRIVATE_KEY = (
        400,
        "The private key is not a PEM private key (PKCS #8, PKCS #1 RSA or SEC1 EC).",
    )
    ENCRYPTED_PRIVATE_KEY = (400, "The private key is encrypted; upload it unencrypted.")
    UNSUPPORTED_KEY_TYPE = (
        400,
        "The key is not RSA (1024 to 8192 bits), ECDSA (P-256, P-384, P-521) or Ed25519.",
    )
    PRIVATE_KEY_MISMATCH = (400, "The private key does not belong to the leaf certificate.")
    INVALID_SSH_PUBLIC_KEY = (400, "The value is not an SSH public key in authorized-keys format.")
    UNSUPPORTED_SSH_KEY_TYPE = (400, "This SSH key type cannot be certified.")
    INVALID_VALIDITY = (400, "The certificate's validity period is invalid.")
    INVALID_HOST_PRINCIPAL = (
        400,
        "A principal of an SSH host certificate is not a host name or an IP address.",
    )
    INVALID_URL = (400, "A URL is not an absolute http, https, tcp or tls URL with a host name.")
    INVALID_CIDR = (400, "The value is not an IPv4 or IPv6 address or CIDR network.")
    INVALID_ACL_RULE = (
        400,
        "An ACL rule is not '*' or 'bind:' and a hostname, a host:port address or a label.",
    )
    INVALID_DOMAIN = (400, "The domain cannot be used here.")
    CONFLICTING_FIELDS = (400, "The request sets fields that exclude each other.")
    INVALID_FIXTURE = (400, "The fixture document has problems; the message lists them.")
    # 400: cloud endpoints (tunnelgw.rules.endpoint_urls, tunnelgw.rules.traffic_policy).
    ENDPOINT_URL_INVALID = (
        400,
        "The endpoint URL is not scheme://host[:port] (http, https, tcp, tls).",
    )
    ENDPOINT_PORT_INVALID = (
        400,
        "The endpoint URL's port is not one its scheme and binding allow.",
    )
    ENDPOINT_BINDING_INVALID = (
        400,
        "bindings must be exactly one of public, internal, kubernetes.",
    )
    ENDPOINT_INTERNAL_HOST_REQUIRED = (
        400,
        "An endpoint with the internal binding needs a hostname ending in .internal.",
    )
    ENDPOINT_INTERNAL_BINDING_REQUIRED = (
        400,
        "A .internal hostname needs the internal binding.",
    )
    ENDPOINT_KUBERNETES_URL_INVALID = (
        400,
        "A kubernetes-bound endpoint's URL is http or tcp://service.namespace[:port].",
    )
    ENDPOINT_DOMAIN_NOT_RESERVED = (
        400,
        "A public endpoint's host must be a reserved domain of the account (or match one).",
    )
    ENDPOINT_ADDR_NOT_RESERVED = (
        400,
        "A public tcp endpoint's host:port must be a reserved TCP address of the account.",
    )
    ENDPOINT_SCHEME_CHANGE = (400, "An endpoint's scheme cannot change; create a new endpoint.")
    INVALID_TRAFFIC_POLICY = (400, "The traffic policy is invalid; the details say where.")
    TRAFFIC_POLICY_SECRET_NOT_FOUND = (
        400,
        "The traffic policy reads a secret the account does not have; details name it.",
    )
    # 400: event destinations (tunnelgw.rules.event_targets).
    INVALID_EVENT_TARGET = (
        400,
        "The target must set exactly one of firehose, kinesis, cloudwatch_logs, datadog and "
        "azure_logs_ingestion.",
    )
    INVALID_AWS_AUTH = (400, "An AWS target's auth must set exactly one of role or creds.")
    # 400: list filters (tunnelgw.rules.filtering); the message gives the column.
    FILTER_SYNTAX = (400, "The filter is not a valid expression.")
    FILTER_UNKNOWN_FIELD = (400, "The filter names a field the items do not have.")
    FILTER_TYPE = (400, "The filter applies an operator or function to a value of the wrong type.")
    FILTER_TOO_LONG = (400, "The filter is longer than 4096 bytes.")
    # 400: Kubernetes operators (tunnelgw.handlers.kubernetes_operators).
    INVALID_CSR = (
        400,
        "The CSR is not one PEM certificate signing request (PKCS #10, CERTIFICATE REQUEST).",
    )
    CSR_SIGNATURE_INVALID = (
        400,
        "The CSR's signature does not verify with its own public key; make it again.",
    )
    INVALID_ENDPOINT_SELECTOR = (400, "An endpoint selector is not a valid filter of endpoints.")
    BINDING_NOT_ALLOWED = (
        400,
        "A binding is set only when enabled_features holds 'bindings'.",
    )
    BINDING_REQUIRED = (
        400,
        "enabled_features holds 'bindings' but there is no binding: send one with a csr.",
    )
    # 401 / 403: who is calling, and may they.
    AUTHENTICATION_REQUIRED = (401, "Send 'Authorization: Bearer <API key token>'.")
    INVALID_CREDENTIALS = (401, "The bearer token is malformed, unknown or revoked.")
    PERMISSION_DENIED = (403, "The authenticated principal may not do this.")
    NOT_OWNER = (
        403,
        "Only the principal that owns this resource, or an admin of the account, may change "
        "or delete it.",
    )
    IP_RESTRICTED = (
        403,
        "An enforced IP restriction of the account does not allow requests from this address.",
    )
    PRINCIPAL_INACTIVE = (
        403,
        "The API key or access token belongs to an inactive bot user; an admin can make it "
        "active again.",
    )
    SCOPE_REQUIRED = (
        403,
        "The access token is valid, but its scopes do not allow this operation "
        "(`details.scope` names the scope it needs).",
    )
    AGENT_AUTH_FAILED = (
        403,
        "The agent's authtoken is not the token of a tunnel credential of the account.",
    )
    AGENT_BIND_DENIED = (403, "The ACL of the agent's credential does not allow this binding.")
    # 404 / 405: what is being addressed.
    NOT_FOUND = (404, "No such resource.")
    REFERENCE_NOT_FOUND = (404, "A resource named in the request body does not exist.")
    BACKEND_MODULE_NOT_SET = (404, "The TLS edge has no backend module.")
    ROUTE_NOT_FOUND = (404, "No such route.")
    METHOD_NOT_ALLOWED = (405, "This route does not accept that method.")
    # 408 / 409 / 413 / 415: the request cannot be taken as it is.
    REQUEST_TIMEOUT = (408, "The request did not arrive in time.")
    CONFLICT = (409, "The request conflicts with the current state.")
    SSH_CA_IN_USE = (409, "The SSH certificate authority signed certificates that are unexpired.")
    DOMAIN_IN_USE = (409, "The domain is already reserved.")
    DOMAIN_REFERENCED = (
        409,
        "Cloud endpoints use the reserved domain; delete them or change their URLs first.",
    )
    EVENT_SOURCE_EXISTS = (409, "The event subscription already has a source of that type.")
    CERTIFICATE_IN_USE = (409, "The TLS certificate is attached to a reserved domain.")
    BACKEND_IN_USE = (409, "The tunnel group backend is the backend of an edge or route.")
    NO_FREE_ADDRESS = (409, "Every TCP address of the configured port range is reserved.")
    QUOTA_EXCEEDED = (409, "The account holds as many resources of this kind as it may.")
    IP_POLICY_IN_USE = (
        409,
        "An IP restriction uses the IP policy; take it out of the restriction first.",
    )
    ENDPOINT_URL_IN_USE = (
        409,
        "Another endpoint of the account has this URL and binding; pooling must be on for both.",
    )
    AGENT_ENDPOINT_READ_ONLY = (
        409,
        "An agent endpoint is managed by its agent; only cloud endpoints change here.",
    )
    SECRET_IN_USE = (
        409,
        "A cloud endpoint's traffic policy reads the secret; change those policies first.",
    )
    AGENT_COMMAND_REFUSED = (409, "The agent cannot carry out this command in its state.")
    EVENT_DESTINATION_IN_USE = (
        409,
        "An event subscription sends to the event destination; take it out of the subscription "
        "first.",
    )
    VAULT_NAME_TAKEN = (409, "The account already has a vault of that name.")
    SECRET_NAME_TAKEN = (409, "The vault already has a secret of that name.")
    VAULT_NOT_EMPTY = (409, "The vault holds secrets; delete them first.")
    # 409: account snapshots (tunnelgw.services.snapshots).
    SECRET_LEFT_OUT = (
        409,
        "The resource was loaded from a snapshot without the secret this operation needs.",
    )
    BODY_TOO_LARGE = (413, "The request body is larger than the server accepts.")
    UNSUPPORTED_MEDIA_TYPE = (415, "Send the request body as 'Content-Type: application/json'.")
    # 429: only ever injected by a fault rule of the admin API.
    RATE_LIMITED = (429, "Too many requests; retry later.")
    # 431: refused by the HTTP protocol before routing (tunnelgw.http.edge).
    HEADERS_TOO_LARGE = (431, "The request line and headers are larger than the server accepts.")
    # 5xx: our fault.
    INTERNAL = (500, "Internal server error; the operation_id identifies it in the server log.")
    NOT_IMPLEMENTED = (501, "This operation of the platform's API is not served by this server.")
    SERVICE_UNAVAILABLE = (503, "The server cannot serve requests now (e.g. database down).")

    @property
    def error_code(self) -> str:
        return f"ERR_{self.name}"


class ApiError(Exception):
    """An error rendered as the wire-conventions error body.

    `details` values are strings; `operation_id` is added when the error is rendered.
    `context` holds values only the platform profile uses (the domain a message names, whose
    account holds it, ...): tunnelgw's own body stays as it is.
    """

    def __init__(
        self,
        code: Code,
        msg: str | None = None,
        *,
        headers: Mapping[str, str] | None = None,
        context: Mapping[str, str] | None = None,
        **details: str,
    ) -> None:
        self.code = code
        self.msg = msg or code.message
        self.details = details
        self.headers = dict(headers or {})
        # Values the platform profile's messages quote and its code choice reads
        # (tunnelgw.core.platform_errors); never rendered in tunnelgw's own body.
        self.context: dict[str, str] = dict(context or {})
        super().__init__(self.msg)

    @property
    def status_code(self) -> int:
        """The HTTP status (also read by Connexion when it picks among security errors)."""
        return self.code.status

    def body(self, operation_id: str) -> dict[str, object]:
        """The JSON error body."""
        return {
            "error_code": self.code.error_code,
            "status_code": self.code.status,
            "msg": self.msg,
            "details": {**self.details, "operation_id": operation_id},
        }

    def __repr__(self) -> str:
        return f"ApiError({self.code.error_code}, {self.msg!r}, {self.details!r})"


def catalog() -> list[Code]:
    """Every code, in catalog order."""
    return list(Code)
