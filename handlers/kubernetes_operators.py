"""Kubernetes operators (`/kubernetes_operators`): a cluster's operator registers its
deployment, enabled features and region. With the `bindings` feature it has a binding: the
server's issuing CA for operator bindings signs the binding's CSR into a TLS client
certificate, and the binding's endpoint selectors (CEL, the list filter engine) pick its
bound endpoints among the account's endpoints with a `kubernetes` binding."""

from __future__ import annotations

import builtins
from dataclasses import dataclass
from typing import Any

from tunnelgw.core import ids, settings
from tunnelgw.core.errors import ApiError, Code
from tunnelgw.crypto import CryptoError
from tunnelgw.models import Endpoint, KubernetesOperator
from tunnelgw.services import crud, kubernetes_operators, listing, paging
from tunnelgw.services.auth import Caller
from tunnelgw.services.crud import Body

BINDINGS = "bindings"  # the feature that gives an operator a binding
KUBERNETES = "kubernetes"  # the endpoint binding that bound endpoints have
DEFAULT_SELECTORS = ("true",)  # every kubernetes-bound endpoint, as the operator defaults
DEPLOYMENT_FIELDS = {
    "name": "deployment_name",
    "namespace": "deployment_namespace",
    "version": "deployment_version",
    "cluster_name": "deployment_cluster_name",
}
FIELDS = {**crud.DESCRIBED_FIELDS, "enabled_features": "enabled_features"}


@dataclass(frozen=True)
class BindingChange:
    """A request's binding, checked; None for each field it leaves as it is."""

    selectors: builtins.list[str] | None
    csr: str | None
    ingress_endpoint: str | None


def _checked_csr(text: str) -> str:
    """`text` when it is a PEM CSR the issuing CA can sign; ApiError (400) otherwise."""
    from tunnelgw.crypto import issuing  # cryptography (~8 MiB): loaded at first use

    try:
        issuing.load_request(text)
    except CryptoError as exc:
        # Rule names are catalog code names (tests/unit/test_crypto_x509.py keeps them so).
        raise ApiError(Code[exc.rule.name], exc.msg, field="binding.csr") from None
    return text


def _checked_selectors(values: builtins.list[str]) -> builtins.list[str]:
    """Each selector compiled as a filter of endpoints; `[]` is the default (`["true"]`)."""
    selectors = [*(values or DEFAULT_SELECTORS)]
    for index, selector in enumerate(selectors):
        field = f"binding.endpoint_selectors[{index}]"
        try:
            listing.compile_for(selector, "Endpoint")
        except ApiError as exc:
            raise ApiError(
                Code.INVALID_ENDPOINT_SELECTOR, f"{field}: {exc.msg}", field=field
            ) from None
    return selectors


def binding_change(binding: dict[str, Any] | None) -> BindingChange | None:
    """The body's `binding`, checked (empty strings and lists are unset, as clients send)."""
    if binding is None:
        return None
    selectors = binding.get("endpoint_selectors")
    csr = binding.get("csr") or None
    return BindingChange(
        selectors=None if selectors is None else _checked_selectors(selectors),
        csr=None if csr is None else _checked_csr(csr),
        ingress_endpoint=binding.get("ingress_endpoint"),
    )


def _default_ingress_endpoint() -> str:
    return f"kubernetes-binding-ingress.{settings.current().shared_domain}:443"


def _drop_binding(row: KubernetesOperator) -> None:
    row.endpoint_selectors = row.ingress_endpoint = row.binding_csr = row.cert_pem = None
    row.cert_not_before = row.cert_not_after = None


def settle_binding(row: KubernetesOperator, change: BindingChange | None) -> str | None:
    """Apply `change` to the row's binding under its (new) enabled features; the CSR to sign,
    if a new one came. ApiError(400) when the binding and the features disagree."""
    if BINDINGS not in row.enabled_features:
        if change is not None:
            raise ApiError(
                Code.BINDING_NOT_ALLOWED,
                "binding is set only with 'bindings' in enabled_features; add it there or "
                "leave binding out.",
                field="binding",
            )
        _drop_binding(row)
        return None
    if row.endpoint_selectors is None:  # the feature comes on: a binding must come with it
        if change is None or change.csr is None:
            raise ApiError(
                Code.BINDING_REQUIRED,
                "enabled_features holds 'bindings': send binding.csr, a PEM certificate "
                "signing request for the operator's client key.",
                field="binding.csr",
            )
        row.endpoint_selectors = [*DEFAULT_SELECTORS]
        row.ingress_endpoint = _default_ingress_endpoint()
    if change is None:
        return None
    if change.selectors is not None:
        row.endpoint_selectors = change.selectors
    if change.ingress_endpoint is not None:
        row.ingress_endpoint = change.ingress_endpoint or _default_ingress_endpoint()
    return change.csr if change.csr not in (None, row.binding_csr) else None


async def create(caller: Caller, body: Body = None) -> tuple[dict[str, Any], int]:
    body = body or {}
    caller = caller
    change = binding_change(body.get("binding"))
    row = KubernetesOperator.new(
        id=ids.new_id(KubernetesOperator.PREFIX),
        account_id=caller.account_id,
        principal_id=caller.principal_id,
        region=body.get("region") or "global",
    )
    crud.apply_patch(row, body, FIELDS)
    crud.apply_patch(row, body.get("deployment") or {}, DEPLOYMENT_FIELDS)
    row.updated_at = row.created_at
    csr = settle_binding(row, change)
    return (await kubernetes_operators.create(row, csr)).to_api(), 201


async def update(caller: Caller, id: str, body: Body = None) -> dict[str, Any]:  # noqa: A002
    """Description, metadata, enabled features, region, the deployment's name and version,
    and the binding (a new CSR is signed; the same one keeps the certificate)."""
    body = body or {}
    binding = binding_change(body.get("binding"))

    def change(row: KubernetesOperator) -> str | None:
        crud.apply_patch(row, body, FIELDS)
        if body.get("region") is not None:
            row.region = body["region"] or "global"
        crud.apply_patch(row, body.get("deployment") or {}, DEPLOYMENT_FIELDS)
        return settle_binding(row, binding)

    return (await kubernetes_operators.update(caller, id, change)).to_api()


async def get_bound_endpoints(
    caller: Caller,
    id: str,  # noqa: A002 - the spec's parameter names
    limit: int = paging.MAX_LIMIT,
    before_id: str | None = None,
    filter: str | None = None,  # noqa: A002
) -> dict[str, Any]:
    """The account's endpoints with a `kubernetes` binding that one of the operator's
    selectors matches (none without a binding), and `filter` when given; newest first, paged
    as filtered lists are (tunnelgw.services.listing)."""
    row = await crud.read_owned(caller, KubernetesOperator, id)
    start = paging.cursor(Endpoint.PREFIX, before_id)
    narrow = None if filter is None else listing.compile_for(filter, "Endpoint")
    selectors = [listing.compile_for(text, "Endpoint") for text in row.endpoint_selectors or ()]

    def bound(item: dict[str, Any]) -> bool:
        return (
            KUBERNETES in item["bindings"]
            and any(selector.matches(item) for selector in selectors)
            and (narrow is None or narrow.matches(item))
        )

    found = listing.Found([], None)
    if selectors:
        found = await listing.scan(caller, Endpoint, start, limit, bound)
    query = [] if filter is None else [("filter", filter)]
    path = f"{KubernetesOperator.PATH}/{row.id}/bound_endpoints"
    return listing.envelope("endpoints", path, found, limit, query)


# The operations that are the shared CRUD ones (tunnelgw.services.crud.Resource).
resource = crud.Resource(KubernetesOperator, "operators")
get, list, delete = resource.get, resource.list, resource.delete
