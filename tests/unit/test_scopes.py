"""The scope table (tunnelgw.core.scopes, derived from the spec) against the spec: every
operation that takes a credential names a scope, every scope it names is one a token can hold
(or the admin API's marker), and the spec's scope enum lists exactly the table's scopes."""

from __future__ import annotations

from tunnelgw.core import scopes
from tunnelgw.core.spec import load as load_spec

SPEC = load_spec()


def _operations() -> dict[str, bool]:
    """Each operationId of the spec, and whether it takes a credential."""
    default = bool(SPEC.get("security"))
    found: dict[str, bool] = {}
    for item in SPEC["paths"].values():
        for method, op in item.items():
            if method == "parameters":
                continue
            secured = bool([r for r in op.get("security", SPEC.get("security", [])) if r])
            found[op["operationId"]] = found.get(op["operationId"], False) or (
                secured if "security" in op else default
            )
    return found


def test_every_authenticated_operation_names_a_scope():
    missing = sorted(
        op for op, secured in _operations().items() if secured and op not in scopes.REQUIRED
    )
    assert not missing, f"operations without a scope in tunnelgw.core.scopes: {missing}"


def test_the_table_names_no_operation_the_spec_lacks():
    extra = sorted(set(scopes.REQUIRED) - set(_operations()))
    assert not extra, f"scope table entries for no operation of the spec: {extra}"


def test_every_scope_named_is_known():
    known = {*scopes.SCOPES, scopes.ADMIN_ONLY}
    unknown = {op: scope for op, scope in scopes.REQUIRED.items() if scope not in known}
    assert not unknown, unknown


def test_admin_operations_are_not_open_to_tokens_and_others_are():
    for op, scope in scopes.REQUIRED.items():
        assert (scope == scopes.ADMIN_ONLY) == op.startswith("admin."), op


def test_the_spec_enum_lists_the_scopes():
    assert SPEC["components"]["schemas"]["AccessTokenScope"]["enum"] == list(scopes.SCOPES)


def test_reads_and_writes():
    assert scopes.required("endpoints.list") == "endpoints:read"
    assert scopes.required("endpoints.create") == "endpoints:write"
    assert scopes.required("reserved_domains.detach_certificate") == "domains:write"
    assert scopes.required("tunnel_sessions.stop") == "tunnel-sessions:manage"
    assert scopes.required("access_tokens.revoke") == "access-tokens:write"
    assert scopes.required("health.get") is None
    assert scopes.TUNNEL_START in scopes.SCOPES
