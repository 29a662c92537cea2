"""Kubernetes operators stored: a binding's CSR signed by the server's issuing CA for
operator bindings (tunnelgw.services.certstore) in the unit that writes the operator."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

from tunnelgw.core import timefmt
from tunnelgw.models import KubernetesOperator
from tunnelgw.services import certstore, crud, quotas
from tunnelgw.services.auth import Caller
from tunnelgw.storage import db
from tunnelgw.storage.unit import Unit

# The operator renews its certificate 30 days before it ends; a year leaves it 11 months.
CERT_VALIDITY = timedelta(days=365)


async def _sign(unit: Unit, row: KubernetesOperator, csr: str) -> None:
    """Sign `csr` for the row: a client certificate named after the operator's id."""
    not_before = timefmt.utcnow()
    not_after = not_before + CERT_VALIDITY
    row.cert_pem = await certstore.sign_request(
        unit, certstore.OPERATOR_BINDINGS_CA, csr, row.id, not_before, not_after
    )
    row.binding_csr, row.cert_not_before, row.cert_not_after = csr, not_before, not_after


async def create(row: KubernetesOperator, csr: str | None) -> KubernetesOperator:
    """CREATE: `row` admitted by its quota and inserted, its binding's `csr` signed when
    given."""
    async with db.write() as unit:
        if csr is not None:
            await _sign(unit, row, csr)
        await quotas.add(unit, row)
    return row


async def update(
    caller: Caller, id_: str, change: Callable[[KubernetesOperator], str | None]
) -> KubernetesOperator:
    """PATCH: `change` applied to the caller's operator, locked; the CSR it gives (a new one)
    signed."""
    async with db.write() as unit:
        row = await crud.get_managed(unit, KubernetesOperator, caller, id_, lock=True)
        csr = change(row)
        if csr is not None:
            await _sign(unit, row, csr)
        row.updated_at = timefmt.utcnow()
    return row
