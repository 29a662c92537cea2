"""What an account reserves, stored: reserved domains and agent ingresses (a domain unique
over all accounts; their certificate references and certificate management settled by
tunnelgw.services.certstore in the unit that changes the row) and reserved TCP addresses (a
free port of the configured range)."""

from __future__ import annotations

from typing import Any

from tunnelgw.core import ids, settings, timefmt
from tunnelgw.core.errors import ApiError, Code
from tunnelgw.models import (
    AgentIngress,
    EndpointConfiguration,
    ReservedAddr,
    ReservedDomain,
    TlsCertificate,
)
from tunnelgw.models.reserved_addr import free_port
from tunnelgw.services import certstore, crud, quotas
from tunnelgw.services.auth import Caller
from tunnelgw.storage import db
from tunnelgw.storage.unit import Unit

ENDPOINT_CONFIGURATION_FIELDS = (
    "http_endpoint_configuration_id",
    "https_endpoint_configuration_id",
)


async def _certificate(unit: Unit, caller: Caller, cert_id: str) -> TlsCertificate:
    """The caller's TLS certificate `cert_id` (404 ERR_REFERENCE_NOT_FOUND otherwise),
    share-locked: a concurrent delete of it waits for this unit, then finds it in use."""
    return await crud.get_reference(
        unit, TlsCertificate, caller, cert_id, "certificate_id", lock="share"
    )


async def create_domain(caller: Caller, row: ReservedDomain, cert_id: str | None) -> ReservedDomain:
    """CREATE /reserved_domains: `row` inserted, with the certificate `cert_id` when given;
    409 ERR_DOMAIN_IN_USE when any account holds its domain."""
    async with db.write() as unit:
        # Checked first for a clear error; the unique index decides under races (409).
        held_by = await crud.holder(unit, ReservedDomain.domain, row.domain)
        if held_by is not None:
            whose = "this account" if held_by == caller.account_id else "another account"
            raise ApiError(
                Code.DOMAIN_IN_USE,
                f"{row.domain!r} is already reserved.",
                context={"domain": row.domain, "reserved_by": whose},
                field="domain",
            )
        if cert_id:  # "" is unset, as null is
            await _certificate(unit, caller, cert_id)
            row.certificate_id = cert_id
        await quotas.add(unit, row)
    return row


async def _locked(unit: Unit, caller: Caller, id_: str) -> ReservedDomain:
    """The caller's row `id_`, locked for this write unit and settled to now; 404 else."""
    row = await crud.get_managed(unit, ReservedDomain, caller, id_, lock=True)
    await certstore.settle_row(unit, row, timefmt.utcnow())
    return row


async def _set_references(
    unit: Unit, caller: Caller, row: ReservedDomain, body: dict[str, Any]
) -> None:
    """The endpoint configurations and the uploaded certificate of a PATCH body."""
    for field in ENDPOINT_CONFIGURATION_FIELDS:
        value = body.get(field)
        if value:
            await crud.get_reference(unit, EndpointConfiguration, caller, value, field)
        if value is not None:
            setattr(row, field, value or None)  # "" clears
    cert_id = body.get("certificate_id")
    if cert_id:  # "" changes nothing, as null does
        await _certificate(unit, caller, cert_id)
        certstore.detach_policy(row)
        row.certificate_id = cert_id


async def update_domain(
    caller: Caller, id_: str, body: dict[str, Any], resolves_to: list[str] | None
) -> ReservedDomain:
    """PATCH /reserved_domains/{id}: description, metadata, `resolves_to` (None: unchanged),
    the references and the certificate management policy of `body`."""
    async with db.write() as unit:
        row = await _locked(unit, caller, id_)
        crud.apply_patch(row, body, crud.DESCRIBED_FIELDS)
        if resolves_to is not None:  # present: replaces the list (null and [] are global)
            row.resolves_to = resolves_to
        await _set_references(unit, caller, row, body)
        certstore.apply_policy_change(row, body, timefmt.utcnow(), null_detaches=False)
    return row


async def detach_policy(caller: Caller, id_: str) -> None:
    """The reserved domain's certificate management policy removed."""
    async with db.write() as unit:
        certstore.detach_policy(await _locked(unit, caller, id_))


async def detach_certificate(caller: Caller, id_: str) -> None:
    """The reserved domain's certificate removed (under a policy a new job starts)."""
    async with db.write() as unit:
        row = await _locked(unit, caller, id_)
        if row.certificate_id is not None:
            certstore.detach_certificate(row, timefmt.utcnow())


async def create_ingress(ingress: AgentIngress) -> AgentIngress:
    """CREATE /agent_ingresses: `ingress` inserted; 409 ERR_DOMAIN_IN_USE when an agent
    ingress of any account has its domain (the unique index is the last word under races:
    409 ERR_CONFLICT)."""
    async with db.write() as unit:
        if await crud.taken(unit, AgentIngress.domain, ingress.domain):
            raise ApiError(
                Code.DOMAIN_IN_USE,
                f"{ingress.domain!r} is already the domain of an agent ingress.",
                context={"domain": ingress.domain},
                field="domain",
            )
        await quotas.add(unit, ingress)
    return ingress


async def update_ingress(caller: Caller, id_: str, body: dict[str, Any]) -> AgentIngress:
    """PATCH /agent_ingresses/{id}: description, metadata and the certificate management
    policy (null turns it off), the row settled to now first."""
    async with db.write() as unit:
        row = await crud.get_managed(unit, AgentIngress, caller, id_, lock=True)
        now = timefmt.utcnow()
        await certstore.settle_row(unit, row, now)
        crud.apply_patch(row, body, crud.DESCRIBED_FIELDS)
        certstore.apply_policy_change(row, body, now, null_detaches=True)
    return row


async def reserve_addr(caller: Caller, region: str, body: dict[str, Any]) -> ReservedAddr:
    """CREATE /reserved_addrs: the first free port of the configured range on the region's
    TCP host (409 ERR_NO_FREE_ADDRESS when none is), with the body's description and
    metadata."""
    config = settings.current()
    host = config.tcp_host(region)
    async with db.write() as unit:
        port = await free_port(unit, host, config.tcp_port_min, config.tcp_port_max)
        if port is None:
            raise ApiError(
                Code.NO_FREE_ADDRESS,
                f"Every port of {config.tcp_port_min}..{config.tcp_port_max} on {host} is "
                "reserved; release an address or widen the range (TUNNELGW_TCP_PORT_MIN/MAX).",
                host=host,
            )
        addr = ReservedAddr.new(
            id=ids.new_id(ReservedAddr.PREFIX),
            account_id=caller.account_id,
            host=host,
            port=port,
            region=region,
        )
        crud.apply_patch(addr, body, crud.DESCRIBED_FIELDS)
        # A concurrent reservation of the same port loses on the unique index (409).
        await quotas.add(unit, addr)
    return addr
