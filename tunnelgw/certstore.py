"""Certificate management on stored reserved domains: settle the rows that are due (see
tunnelgw.certmanagement), issue and store their certificates, and the issuing CA row.

Settlement happens when a domain is read or written, not in the background: readers find
the due rows, then re-load each under a row lock in a write unit, re-check and apply.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from datetime import datetime, timedelta

from sqlalchemy.dialects import postgresql, sqlite

from models import IssuingAuthority, ReservedDomain, TlsCertificate
from models.tls_certificate import certificate_columns
from tunnelgw import certmanagement, db, ids, settings, timefmt
from tunnelgw.crypto import issuing, keys
from tunnelgw.db import Unit
from tunnelgw.errors import ApiError, Code

# The issuing CA is valid from a day before its creation, so a certificate whose job
# completed shortly before the CA was first needed still lies within the CA's validity.
CA_BACKDATE = timedelta(days=1)


def is_due(row: ReservedDomain, now: datetime) -> bool:
    if row.cert_authority is None:
        return False
    status = certmanagement.Status.of(row)
    return certmanagement.is_due(status, now, settings.current())


async def settle_row(unit: Unit, row: ReservedDomain, now: datetime) -> None:
    """Bring the (locked) row's certificate management up to `now`, issuing if due."""
    if row.cert_authority is None:
        return
    config = settings.current()
    status = certmanagement.Status.of(row)
    settled = certmanagement.settle(status, row.domain, row.cert_authority, now, config)
    if settled is None:
        return
    if settled.issue_at is not None:
        cert = await _issue(unit, row, settled.issue_at)
        row.certificate_id = cert.id
    settled.status.write_to(row)


async def settle(ids_: Iterable[str]) -> dict[str, ReservedDomain]:
    """Settle the rows `ids_` (re-loaded under a lock, in id order so two settlers never
    wait on each other crosswise); the settled rows by id (rows deleted meanwhile are
    missing)."""
    settled: dict[str, ReservedDomain] = {}
    async with db.write() as unit:
        now = timefmt.utcnow()
        for id_ in sorted(set(ids_)):
            row = await unit.get(ReservedDomain, id_, lock=True)
            if row is not None:
                await settle_row(unit, row, now)
                settled[id_] = row
    return settled


async def settled_rows(rows: list[ReservedDomain]) -> list[ReservedDomain]:
    """`rows` as of now: those that are due settled (a read followed by a write unit)."""
    now = timefmt.utcnow()
    due = [row.id for row in rows if is_due(row, now)]
    if not due:
        return rows
    fresh = await settle(due)
    return [fresh.get(row.id, row) for row in rows]


async def _issue(unit: Unit, row: ReservedDomain, issue_at: datetime) -> TlsCertificate:
    config = settings.current()
    authority = await issuing_authority(unit, config.certificate_authority)
    not_before, not_after = certmanagement.window(issue_at, config)
    made = await asyncio.to_thread(
        issuing.issue,
        authority.certificate_pem,
        _unwrap(authority.wrapped_private_key, authority.name),
        row.domain,
        row.cert_private_key_type or certmanagement.DEFAULT_KEY_TYPE,
        not_before,
        not_after,
    )
    cert_id = ids.new_id(TlsCertificate.PREFIX)
    cert = TlsCertificate.new(
        id=cert_id,
        account_id=row.account_id,
        description=f"Issued for {row.domain} by certificate management ({row.cert_authority}).",
        certificate_pem=made.certificate_pem,
        wrapped_private_key=keys.wrap(keys.current(), made.private_key_der, cert_id.encode()),
        issued_for_id=row.id,
        issued_at=issue_at,
        **certificate_columns(made.fields),
    )
    unit.add(cert)
    return cert


def _unwrap(blob: bytes, name: str) -> bytes:
    try:
        return keys.unwrap(keys.current(), blob, name.encode())
    except keys.UnwrapError:
        # A configuration error, not bad input: logged as a 500.
        raise ApiError(
            Code.INTERNAL,
            f"The issuing CA {name!r} does not decrypt with this server's key-encryption key "
            "(TUNNELGW_KEY_ENCRYPTION_KEY).",
        ) from None


async def issuing_authority(unit: Unit, name: str) -> IssuingAuthority:
    """The issuing CA `name`, created on first use. INSERT ... ON CONFLICT DO NOTHING then
    SELECT: concurrent first uses (several workers, PostgreSQL or SQLite) all get the one
    row that won, and none fails."""
    found = await unit.get(IssuingAuthority, name)
    if found is not None:
        return found
    now = timefmt.utcnow()
    made = await asyncio.to_thread(issuing.new_ca, name, now - CA_BACKDATE)
    values = {
        "name": name,
        "certificate_pem": made.certificate_pem,
        "wrapped_private_key": keys.wrap(keys.current(), made.private_key_der, name.encode()),
        "created_at": now,
    }
    dialect = postgresql if unit.dialect == "postgresql" else sqlite
    insert = dialect.insert(IssuingAuthority).values(**values)
    await unit.exec(insert.on_conflict_do_nothing(index_elements=["name"]))
    found = await unit.get(IssuingAuthority, name)
    assert found is not None  # inserted now, or by the unit that won
    return found
