"""Certificate management on stored rows (reserved domains and agent ingresses, both
`tunnelgw.models.cert_managed.CertManaged`): settle the rows that are due (see
tunnelgw.rules.certmanagement), issue and store their certificates, and the issuing CA rows,
which also sign client certificates from signing requests (`sign_request`).

Settlement happens when a row is read or written, not in the background: readers find the
due rows, then re-load each under a row lock in a write unit, re-check and apply.
"""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any, TypeVar

from tunnelgw.core import ids, settings, timefmt
from tunnelgw.core.errors import ApiError, Code
from tunnelgw.crypto import keys
from tunnelgw.models import IssuingAuthority, TlsCertificate
from tunnelgw.models.cert_managed import CertManaged
from tunnelgw.models.tls_certificate import certificate_columns
from tunnelgw.rules import certmanagement
from tunnelgw.services import crud, listing, paging, quotas
from tunnelgw.services.auth import Caller
from tunnelgw.storage import db, records
from tunnelgw.storage.unit import Unit

# tunnelgw.crypto.issuing (and cryptography, ~8 MiB) is imported by the functions that issue:
# a server that never manages a certificate does not load it.


# The issuing CA that signs Kubernetes operators' binding certificates (handlers
# .kubernetes_operators): not certificate management's, so each CA's certificates mean one thing.
OPERATOR_BINDINGS_CA = "kubernetes-operator-bindings"

# The issuing CA is valid from a day before its creation, so a certificate whose job
# completed shortly before the CA was first needed still lies within the CA's validity.
CA_BACKDATE = timedelta(days=1)

M = TypeVar("M", bound=CertManaged)


def attach_policy(row: Any, policy: certmanagement.Policy, now: datetime) -> None:
    """Management on: the certificate in use goes, a provisioning job starts at `now`."""
    row.cert_authority = policy.authority
    row.cert_private_key_type = policy.private_key_type
    row.certificate_id = None
    certmanagement.started(policy.authority, now).write_to(row)


def detach_policy(row: CertManaged) -> None:
    """Management off: policy and status go; the last issued certificate stays."""
    row.cert_authority = row.cert_private_key_type = None
    certmanagement.Status().write_to(row)


def detach_certificate(row: Any, now: datetime) -> None:
    """The certificate goes; a managed row starts a new provisioning job at `now` (its
    `certificate` is null until the job issues one)."""
    row.certificate_id = None
    if row.cert_authority is not None:
        certmanagement.started(row.cert_authority, now).write_to(row)


def apply_policy_change(
    row: CertManaged, body: dict[str, Any], now: datetime, *, null_detaches: bool
) -> None:
    """A PATCH body's `certificate_management_policy`: absent leaves management as it is; a
    policy differing from the current one (re)starts it; null turns it off where
    `null_detaches` (agent ingresses, which have no detach operation), else changes nothing."""
    if "certificate_management_policy" not in body:
        return
    policy = certmanagement.policy(body["certificate_management_policy"], settings.current())
    if policy is None:
        if null_detaches:
            detach_policy(row)
    elif policy.as_api() != row.policy_api():
        attach_policy(row, policy, now)


def is_due(row: CertManaged, now: datetime) -> bool:
    if row.cert_authority is None:
        return False
    status = certmanagement.Status.of(row)
    return certmanagement.is_due(status, now, settings.current())


def _settled(row: CertManaged, now: datetime) -> certmanagement.Settled | None:
    if row.cert_authority is None:
        return None
    status = certmanagement.Status.of(row)
    return certmanagement.settle(
        status, row.cert_name(), row.cert_authority, now, settings.current()
    )


def _key_type(row: CertManaged) -> str:
    return row.cert_private_key_type or certmanagement.DEFAULT_KEY_TYPE


async def settle_row(
    unit: Unit, row: CertManaged, now: datetime, new_keys: dict[str, Any] | None = None
) -> None:
    """Bring the (locked) row's certificate management up to `now`, issuing if due, with
    the key made beforehand for the row (`new_keys` by row id), if any."""
    settled = _settled(row, now)
    if settled is None:
        return
    if settled.issue_at is not None:
        key = (new_keys or {}).get(records.primary_key(row)[0])
        cert = await _issue(unit, row, settled.issue_at, key)
        row.certificate_id = cert.id
    settled.status.write_to(row)


async def settle(
    model: type[M], ids_: Iterable[str], new_keys: dict[str, Any] | None = None
) -> dict[str, M]:
    """Settle the rows `ids_` of `model` (re-loaded under a lock, in id order so two settlers
    never wait on each other crosswise), issuing with the keys made beforehand (`new_keys`:
    row id -> (key type, key)); the settled rows by id (rows deleted meanwhile are
    missing)."""
    settled: dict[str, M] = {}
    async with db.write() as unit:
        now = timefmt.utcnow()
        for id_ in sorted(set(ids_)):
            row: Any = await unit.get(model, id_, lock=True)
            if row is not None:
                await settle_row(unit, row, now, new_keys)
                settled[id_] = row
    return settled


async def _keys_for(rows: Iterable[CertManaged], now: datetime) -> dict[str, Any]:
    """The private keys the rows' due jobs will issue certificates with, made before the
    write unit: an RSA key takes up to a tenth of a second, which no write unit (on SQLite,
    every process's writes) should wait for. A row that changed meanwhile makes its own."""
    from tunnelgw.crypto import issuing

    wanted = {records.primary_key(row)[0]: _key_type(row) for row in rows if _issues(row, now)}
    made: dict[str, Any] = {}
    for id_, key_type in wanted.items():
        made[id_] = (key_type, await asyncio.to_thread(issuing.new_key, key_type))
    return made


def _issues(row: CertManaged, now: datetime) -> bool:
    settled = _settled(row, now)
    return settled is not None and settled.issue_at is not None


async def settled_rows(rows: list[M]) -> list[M]:
    """`rows` (of one table) as of now: those that are due settled (a read followed by a
    write unit)."""
    now = timefmt.utcnow()
    due = [row for row in rows if is_due(row, now)]
    if not due:
        return rows
    model: Any = records.model_of(due[0])
    new_keys = await _keys_for(due, now)
    fresh: dict[str, Any] = await settle(model, [row.id for row in due], new_keys)  # type: ignore[attr-defined]
    return [fresh.get(row.id, row) for row in rows]  # type: ignore[attr-defined]


async def read_settled(caller: Caller, model: type[M], id_: str) -> dict[str, Any]:
    """GET of a certificate-managed resource: the caller's row `id_` as of now (404 else)."""
    async with db.read() as unit:
        row: Any = await crud.get_owned(unit, model, caller, id_)
    api: dict[str, Any] = (await settled_rows([row]))[0].to_api()
    return api


async def list_settled(
    caller: Caller,
    model: type[M],
    key: str,
    limit: int,
    before_id: str | None,
    expression: str | None,
) -> dict[str, Any]:
    """LIST of a certificate-managed resource: each row settled to now before it is rendered
    (and before a `filter` expression sees it)."""
    scoped: Any = model
    if expression is not None:
        return await listing.read_filtered(
            caller, scoped, key, limit, before_id, expression, prepare=settled_rows
        )
    async with db.read() as unit:
        rows, more = await paging.page_rows(unit, scoped, caller, limit, before_id)
    return paging.envelope(key, scoped.PATH, await settled_rows(rows), limit, more=more)


async def _issue(unit: Unit, row: Any, issue_at: datetime, made_key: Any) -> TlsCertificate:
    from tunnelgw.crypto import issuing

    config = settings.current()
    authority = await issuing_authority(unit, config.certificate_authority)
    not_before, not_after = certmanagement.window(issue_at, config)
    key_type = _key_type(row)
    key = made_key[1] if made_key is not None and made_key[0] == key_type else None
    made = await asyncio.to_thread(
        issuing.issue,
        authority.certificate_pem,
        _unwrap(authority.wrapped_private_key, authority.name),
        row.cert_name(),
        key_type,
        not_before,
        not_after,
        key,
    )
    cert_id = ids.new_id(TlsCertificate.PREFIX)
    cert = TlsCertificate.new(
        id=cert_id,
        account_id=row.account_id,
        description=f"Issued for {row.cert_name()} by certificate management "
        f"({row.cert_authority}).",
        certificate_pem=made.certificate_pem,
        wrapped_private_key=keys.wrap(keys.current(), made.private_key_der, cert_id.encode()),
        issued_for_id=row.id,
        issued_at=issue_at,
        **certificate_columns(made.fields),
    )
    # Issued certificates count toward the quota but are never refused (certificate
    # management must not stop): not admitted, so the kind's bound is dropped.
    await quotas.forget(unit, row.account_id, TlsCertificate)
    unit.add(cert)
    return cert


async def sign_request(
    unit: Unit,
    authority_name: str,
    request_pem: str,
    common_name: str,
    not_before: datetime,
    not_after: datetime,
) -> str:
    """A TLS client certificate (PEM) for the signing request `request_pem`, signed by the
    issuing CA `authority_name` (created on first use); raises CryptoError for a request
    tunnelgw.crypto.issuing.load_request refuses."""
    from tunnelgw.crypto import issuing

    authority = await issuing_authority(unit, authority_name)
    signed: str = await asyncio.to_thread(
        issuing.sign_request,
        authority.certificate_pem,
        _unwrap(authority.wrapped_private_key, authority.name),
        request_pem,
        common_name,
        not_before,
        not_after,
    )
    return signed


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
    from tunnelgw.crypto import issuing

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
    dialect = importlib.import_module(f"sqlalchemy.dialects.{unit.dialect}")
    insert = dialect.insert(IssuingAuthority).values(**values)
    await unit.exec(insert.on_conflict_do_nothing(index_elements=["name"]))
    found = await unit.get(IssuingAuthority, name)
    assert found is not None  # inserted now, or by the unit that won
    return found
