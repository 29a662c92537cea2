"""The traffic policy actions: for each documented `type`, the phases it runs in and the JSON
schema of its `config` (one table, data only; tunnelgw.rules.traffic_policy.document applies
it). Each object lists its fields and refuses others, so a misspelt key is an error."""

from __future__ import annotations

from typing import Any

REQUEST = "on_http_request"
RESPONSE = "on_http_response"
CONNECT = "on_tcp_connect"
PHASES = (CONNECT, REQUEST, RESPONSE)
HTTP_PHASES = (REQUEST, RESPONSE)

STRING: dict[str, Any] = {"type": "string"}
BOOLEAN: dict[str, Any] = {"type": "boolean"}
INTEGER: dict[str, Any] = {"type": "integer"}
STRINGS: dict[str, Any] = {"type": "array", "items": STRING}
# A duration as the platform writes them: `30s`, `1h30m`, `500ms`.
DURATION: dict[str, Any] = {
    "type": "string",
    "pattern": r"^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$",
}
HEADERS: dict[str, Any] = {"type": "object", "additionalProperties": STRING}
STATUS: dict[str, Any] = {"type": "integer", "minimum": 100, "maximum": 599}
ON_ERROR: dict[str, Any] = {"enum": ["halt", "continue"]}


def fields(required: tuple[str, ...] = (), **properties: dict[str, Any]) -> dict[str, Any]:
    """An object schema with exactly these `properties`, of which `required` must be set."""
    return {
        "type": "object",
        "properties": properties,
        "required": list(required),
        "additionalProperties": False,
    }


def array_of(item: dict[str, Any], minimum: int = 0) -> dict[str, Any]:
    return {"type": "array", "items": item, "minItems": minimum}


_REPLACEMENTS = array_of(fields(("from",), **{"from": STRING, "to": STRING}), 1)
_OWASP = fields(
    ("on_error",), on_error=ON_ERROR, process_body=BOOLEAN, exclude_rule_ids=array_of(INTEGER)
)
_SESSIONS = {
    "auth_id": STRING,
    "client_id": STRING,
    "client_secret": STRING,
    "scopes": STRINGS,
    "authz_url_params": HEADERS,
    "max_session_duration": DURATION,
    "userinfo_refresh_interval": DURATION,
    "allow_cors_preflight": BOOLEAN,
    "auth_cookie_domain": STRING,
}
_ALLOW_LIST = array_of(fields(("value",), value=STRING), 1)
_JWT = fields(
    ("issuer", "http", "jws"),
    issuer=fields(("allow_list",), allow_list=_ALLOW_LIST),
    audience=fields(allow_list=_ALLOW_LIST),
    http=fields(
        ("tokens",),
        tokens=array_of(
            fields(
                ("type", "method", "name"),
                type={"enum": ["id_token", "access_token", "at+jwt", "it+jwt", "plain", "jwt"]},
                method={"enum": ["header", "body"]},
                name=STRING,
                prefix=STRING,
            ),
            1,
        ),
    ),
    jws=fields(
        ("allowed_algorithms", "keys"),
        allowed_algorithms=array_of({"type": "string", "not": {"const": "none"}}, 1),
        # Documented as a list of key sources; the examples write one object.
        keys={"type": ["object", "array"]},
    ),
)

# type -> (the phases it may run in, the schema of its config)
ACTIONS: dict[str, tuple[tuple[str, ...], dict[str, Any]]] = {
    "add-headers": (
        HTTP_PHASES,
        fields(("headers",), headers={**HEADERS, "minProperties": 1, "maxProperties": 10}),
    ),
    "remove-headers": (HTTP_PHASES, fields(("headers",), headers={**STRINGS, "minItems": 1})),
    "basic-auth": (
        (REQUEST,),
        fields(
            ("credentials",),
            credentials=array_of({"type": "string", "pattern": "^[^:]+:.+$"}, 1),
            realm=STRING,
            enforce=BOOLEAN,
        ),
    ),
    "circuit-breaker": (
        (REQUEST,),
        fields(
            ("error_threshold",),
            error_threshold={"type": "number", "minimum": 0, "maximum": 1},
            volume_threshold=INTEGER,
            window_duration=DURATION,
            tripped_duration=DURATION,
            num_buckets=INTEGER,
            enforce=BOOLEAN,
        ),
    ),
    "close-connection": ((REQUEST, CONNECT), fields()),
    "compress-response": (
        (RESPONSE,),
        fields(algorithms=array_of({"enum": ["gzip", "deflate", "br", "compress"]})),
    ),
    "custom-response": (
        HTTP_PHASES,
        fields(status_code=STATUS, body=STRING, headers=HEADERS),
    ),
    "deny": ((CONNECT, REQUEST), fields(status_code=STATUS)),
    "forward-internal": ((CONNECT, REQUEST), fields(("url",), url=STRING, on_error=ON_ERROR)),
    "http-request": (
        HTTP_PHASES,
        fields(
            ("url",),
            url=STRING,
            method={"enum": ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]},
            query_params=array_of({"type": "object"}),
            headers=HEADERS,
            body=STRING,
            max_redirects=INTEGER,
            timeout=DURATION,
            retry_condition=STRING,
            on_error=ON_ERROR,
        ),
    ),
    "jwt-validation": ((REQUEST,), _JWT),
    "log": (PHASES, fields(("metadata",), metadata={"type": "object"})),
    "oauth": (
        (REQUEST,),
        fields(("provider",), provider=STRING, idle_session_timeout=DURATION, **_SESSIONS),
    ),
    "openid-connect": (
        (REQUEST,),
        fields(("issuer_url",), issuer_url=STRING, idle_session_duration=DURATION, **_SESSIONS),
    ),
    "owasp-crs-request": ((REQUEST,), _OWASP),
    "owasp-crs-response": ((RESPONSE,), _OWASP),
    "rate-limit": (
        (REQUEST,),
        fields(
            ("name", "algorithm", "capacity", "rate", "bucket_key"),
            name=STRING,
            enforce=BOOLEAN,
            algorithm={"enum": ["sliding_window"]},
            capacity={"type": "integer", "minimum": 1},
            rate=DURATION,
            bucket_key=STRINGS,
        ),
    ),
    "redirect": (
        (REQUEST,),
        fields(("to",), **{"from": STRING}, to=STRING, status_code=STATUS, headers=HEADERS),
    ),
    "request-body-find-replace": (
        (REQUEST,),
        fields(("replacements",), replacements=_REPLACEMENTS),
    ),
    "response-body-find-replace": (
        (RESPONSE,),
        fields(("replacements",), replacements=_REPLACEMENTS),
    ),
    "restrict-ips": (
        PHASES,
        fields(
            ("enforce",),
            enforce=BOOLEAN,
            allow=STRINGS,
            deny=STRINGS,
            ip_policies=array_of({"type": "string", "pattern": "^ipp_[0-9A-Za-z]+$"}),
        ),
    ),
    "set-vars": (
        PHASES,
        fields(
            ("vars",), vars=array_of({"type": "object", "minProperties": 1, "maxProperties": 1})
        ),
    ),
    "terminate-tls": (
        (CONNECT,),
        fields(
            min_version={"enum": ["1.2", "1.3"]},
            max_version={"enum": ["1.2", "1.3"]},
            server_private_key=STRING,
            server_certificate=STRING,
            mutual_tls_certificate_authorities=STRINGS,
            mutual_tls_verification_strategy={
                "enum": ["require-and-verify", "require-any", "request"]
            },
        ),
    ),
    "url-rewrite": ((REQUEST,), fields(("to",), **{"from": STRING}, to=STRING)),
    "verify-webhook": (
        (REQUEST,),
        fields(("provider", "secret"), provider=STRING, secret=STRING, enforce=BOOLEAN),
    ),
}

# The phases each endpoint scheme runs (tcp and tls endpoints see no HTTP).
SCHEME_PHASES = {
    "http": PHASES,
    "https": PHASES,
    "tcp": (CONNECT,),
    "tls": (CONNECT,),
}
