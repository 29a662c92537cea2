"""referenced resources served by the API (issue 11): TLS certificate fields, tunnel fields
and tunnel group membership, route match types and backend modules, reserved addresses as a
unique host and port, and the indexes of the in-use checks

Existing rows are carried over:
- TLS certificates get the fields derived from their stored certificate (issued ones their
  `issued_at`, the certificate's start). A certificate record without a usable certificate
  (older fixture files allowed a record without PEM) cannot be served as a TLS certificate:
  it is deleted, and reserved domains that named it lose the reference.
- Reserved addresses `host:port` are split into host (lower case) and port. An address held
  by several rows (one fixture file loaded into several accounts) stops the upgrade with the
  ids to resolve: addresses are unique from now on.
- Tunnels start at their creation time, with no labels; routes match by path prefix.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-23 08:04:53.294565
"""

import logging
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

log = logging.getLogger("alembic.runtime.migration")

ID_TYPE = sa.String(length=64).with_variant(sa.String(length=64, collation="C"), "postgresql")
TLS_TEXT_COLUMNS = (
    "subject_common_name",
    "issuer_common_name",
    "serial_number",
    "subject_organization",
    "subject_organizational_unit",
    "subject_locality",
    "subject_province",
    "subject_country",
)
TLS_JSON_COLUMNS = ("subject_alternative_names", "key_usages", "extended_key_usages")


def upgrade() -> None:
    _tunnels()
    op.create_table(
        "tunnel_group_member",
        sa.Column("backend_id", ID_TYPE, nullable=False),
        sa.Column("tunnel_id", ID_TYPE, nullable=False),
        sa.Column("account_id", ID_TYPE, nullable=False),
        sa.ForeignKeyConstraint(["account_id"], ["account.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["backend_id"], ["tunnel_group_backend.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["tunnel_id"], ["tunnel.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("backend_id", "tunnel_id"),
    )
    with op.batch_alter_table("tunnel_group_member", schema=None) as batch_op:
        batch_op.create_index("ix_tunnel_group_member_tunnel_id", ["tunnel_id"], unique=False)

    with op.batch_alter_table("edge", schema=None) as batch_op:
        batch_op.create_index("ix_edge_backend_id", ["backend_id"], unique=False)

    _edge_routes()
    _reserved_addrs()

    with op.batch_alter_table("reserved_domain", schema=None) as batch_op:
        batch_op.create_index("ix_reserved_domain_certificate_id", ["certificate_id"], unique=False)

    _tls_certificates()


def _tunnels() -> None:
    with op.batch_alter_table("tunnel", schema=None) as batch_op:
        batch_op.add_column(sa.Column("public_url", sa.Text(), nullable=True))
        batch_op.add_column(sa.Column("started_at", sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column("proto", sa.String(length=8), nullable=True))
        batch_op.add_column(sa.Column("region", sa.String(length=8), nullable=True))
        batch_op.add_column(sa.Column("labels", sa.JSON(), nullable=True))
        batch_op.add_column(sa.Column("forwards_to", sa.Text(), nullable=True))
        batch_op.add_column(sa.Column("endpoint_id", ID_TYPE, nullable=True))
    tunnel = sa.table(
        "tunnel",
        sa.column("public_url", sa.Text()),
        sa.column("started_at", sa.DateTime(timezone=True)),
        sa.column("created_at", sa.DateTime(timezone=True)),
        sa.column("proto", sa.String()),
        sa.column("region", sa.String()),
        sa.column("labels", sa.JSON()),
        sa.column("forwards_to", sa.Text()),
    )
    op.execute(
        tunnel.update().values(
            public_url="",
            started_at=tunnel.c.created_at,
            proto="https",
            region="us",
            labels={},
            forwards_to="",
        )
    )
    with op.batch_alter_table("tunnel", schema=None) as batch_op:
        batch_op.alter_column("public_url", existing_type=sa.Text(), nullable=False)
        batch_op.alter_column(
            "started_at", existing_type=sa.DateTime(timezone=True), nullable=False
        )
        batch_op.alter_column("proto", existing_type=sa.String(length=8), nullable=False)
        batch_op.alter_column("region", existing_type=sa.String(length=8), nullable=False)
        batch_op.alter_column("labels", existing_type=sa.JSON(), nullable=False)
        batch_op.alter_column("forwards_to", existing_type=sa.Text(), nullable=False)


def _edge_routes() -> None:
    with op.batch_alter_table("edge_route", schema=None) as batch_op:
        batch_op.add_column(sa.Column("match_type", sa.String(length=16), nullable=True))
        batch_op.add_column(sa.Column("backend_id", ID_TYPE, nullable=True))
        batch_op.add_column(sa.Column("backend_enabled", sa.Boolean(), nullable=True))
    route = sa.table("edge_route", sa.column("match_type", sa.String()))
    op.execute(route.update().values(match_type="path_prefix"))
    with op.batch_alter_table("edge_route", schema=None) as batch_op:
        batch_op.alter_column("match_type", existing_type=sa.String(length=16), nullable=False)
        batch_op.create_index("ix_edge_route_backend_id", ["backend_id"], unique=False)
        batch_op.create_index("ix_edge_route_edge_id", ["edge_id"], unique=False)


def _reserved_addrs() -> None:
    with op.batch_alter_table("reserved_addr", schema=None) as batch_op:
        batch_op.add_column(sa.Column("host", sa.String(length=253), nullable=True))
        batch_op.add_column(sa.Column("port", sa.Integer(), nullable=True))
    addrs = sa.table(
        "reserved_addr",
        sa.column("id", sa.String()),
        sa.column("addr", sa.Text()),
        sa.column("host", sa.String()),
        sa.column("port", sa.Integer()),
    )
    connection = op.get_bind()
    holders: dict[tuple[str, int], list[str]] = {}
    for id_, addr in connection.execute(sa.select(addrs.c.id, addrs.c.addr)).all():
        host, _, port = addr.rpartition(":")
        key = (host.lower(), int(port))
        holders.setdefault(key, []).append(id_)
        connection.execute(addrs.update().where(addrs.c.id == id_).values(host=key[0], port=key[1]))
    shared = {f"{host}:{port}": ids for (host, port), ids in holders.items() if len(ids) > 1}
    if shared:
        raise RuntimeError(
            "Reserved addresses are unique from schema revision 0004 on, but these are held by "
            f"several rows (fixture files loaded into several accounts): {shared}. Delete all "
            "but one of each (e.g. `tunnelgw reset --account ...` on the extra accounts) and "
            "migrate again."
        )
    with op.batch_alter_table("reserved_addr", schema=None) as batch_op:
        batch_op.alter_column("host", existing_type=sa.String(length=253), nullable=False)
        batch_op.alter_column("port", existing_type=sa.Integer(), nullable=False)
        batch_op.create_index("ux_reserved_addr_host_port", ["host", "port"], unique=True)
        batch_op.drop_column("addr")


def _tls_certificates() -> None:
    with op.batch_alter_table("tls_certificate", schema=None) as batch_op:
        batch_op.add_column(sa.Column("issued_at", sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column("not_before", sa.DateTime(timezone=True), nullable=True))
        for name in TLS_TEXT_COLUMNS:
            batch_op.add_column(sa.Column(name, sa.Text(), nullable=True))
        for name in TLS_JSON_COLUMNS:
            batch_op.add_column(sa.Column(name, sa.JSON(), nullable=True))
        batch_op.add_column(sa.Column("private_key_type", sa.String(length=16), nullable=True))
    _derive_certificate_fields()
    with op.batch_alter_table("tls_certificate", schema=None) as batch_op:
        batch_op.alter_column(
            "not_before", existing_type=sa.DateTime(timezone=True), nullable=False
        )
        batch_op.alter_column("not_after", existing_type=sa.DateTime(timezone=True), nullable=False)
        for name in TLS_TEXT_COLUMNS:
            batch_op.alter_column(name, existing_type=sa.Text(), nullable=False)
        for name in TLS_JSON_COLUMNS:
            batch_op.alter_column(name, existing_type=sa.JSON(), nullable=False)
        batch_op.alter_column(
            "private_key_type", existing_type=sa.String(length=16), nullable=False
        )


def _derive_certificate_fields() -> None:
    certs = sa.table(
        "tls_certificate",
        sa.column("id", sa.String()),
        sa.column("certificate_pem", sa.Text()),
        sa.column("issued_for_id", sa.String()),
        sa.column("issued_at", sa.DateTime(timezone=True)),
        sa.column("not_before", sa.DateTime(timezone=True)),
        sa.column("not_after", sa.DateTime(timezone=True)),
        sa.column("private_key_type", sa.String()),
        *(sa.column(name, sa.Text()) for name in TLS_TEXT_COLUMNS),
        *(sa.column(name, sa.JSON()) for name in TLS_JSON_COLUMNS),
    )
    domains = sa.table(
        "reserved_domain", sa.column("certificate_id", sa.String()), sa.column("id", sa.String())
    )
    connection = op.get_bind()
    query = sa.select(certs.c.id, certs.c.certificate_pem, certs.c.issued_for_id)
    for id_, pem, issued_for in connection.execute(query).all():
        values = _fields(pem or "")
        if values is None:
            log.warning("deleting TLS certificate %s: it holds no usable certificate", id_)
            connection.execute(
                domains.update().where(domains.c.certificate_id == id_).values(certificate_id=None)
            )
            connection.execute(certs.delete().where(certs.c.id == id_))
            continue
        if issued_for is not None:
            values["issued_at"] = values["not_before"]
        connection.execute(certs.update().where(certs.c.id == id_).values(**values))


def _fields(pem: str) -> dict[str, Any] | None:
    """The derived columns of a stored certificate; None if there is none to derive from."""
    from cryptography import x509

    from tunnelgw.crypto import CryptoError, tls

    try:
        leaf = x509.load_pem_x509_certificates(pem.encode("utf-8"))[0]
        fields = tls.certificate_fields(leaf)
    except (ValueError, IndexError, CryptoError):
        return None
    return {
        "subject_common_name": fields.subject_common_name,
        "subject_alternative_names": fields.subject_alternative_names.as_api(),
        "not_before": fields.not_before,  # aware UTC (SQLite stores it without the zone)
        "not_after": fields.not_after,
        "key_usages": [*fields.key_usages],
        "extended_key_usages": [*fields.extended_key_usages],
        "private_key_type": fields.private_key_type,
        "issuer_common_name": fields.issuer_common_name,
        "serial_number": fields.serial_number,
        "subject_organization": fields.subject_organization,
        "subject_organizational_unit": fields.subject_organizational_unit,
        "subject_locality": fields.subject_locality,
        "subject_province": fields.subject_province,
        "subject_country": fields.subject_country,
    }


def downgrade() -> None:
    with op.batch_alter_table("tunnel_group_member", schema=None) as batch_op:
        batch_op.drop_index("ix_tunnel_group_member_tunnel_id")
    op.drop_table("tunnel_group_member")

    with op.batch_alter_table("tunnel", schema=None) as batch_op:
        for name in (
            "endpoint_id",
            "forwards_to",
            "labels",
            "region",
            "proto",
            "started_at",
            "public_url",
        ):
            batch_op.drop_column(name)

    with op.batch_alter_table("tls_certificate", schema=None) as batch_op:
        batch_op.alter_column("not_after", existing_type=sa.DateTime(timezone=True), nullable=True)
        for name in (
            *TLS_TEXT_COLUMNS,
            *TLS_JSON_COLUMNS,
            "private_key_type",
            "not_before",
            "issued_at",
        ):
            batch_op.drop_column(name)

    with op.batch_alter_table("reserved_domain", schema=None) as batch_op:
        batch_op.drop_index("ix_reserved_domain_certificate_id")

    with op.batch_alter_table("reserved_addr", schema=None) as batch_op:
        batch_op.add_column(sa.Column("addr", sa.Text(), nullable=True))
    addrs = sa.table(
        "reserved_addr",
        sa.column("addr", sa.Text()),
        sa.column("host", sa.String()),
        sa.column("port", sa.Integer()),
    )
    op.execute(addrs.update().values(addr=addrs.c.host + ":" + sa.cast(addrs.c.port, sa.String())))
    with op.batch_alter_table("reserved_addr", schema=None) as batch_op:
        batch_op.alter_column("addr", existing_type=sa.Text(), nullable=False)
        batch_op.drop_index("ux_reserved_addr_host_port")
        batch_op.drop_column("port")
        batch_op.drop_column("host")

    with op.batch_alter_table("edge_route", schema=None) as batch_op:
        batch_op.drop_index("ix_edge_route_edge_id")
        batch_op.drop_index("ix_edge_route_backend_id")
        batch_op.drop_column("backend_enabled")
        batch_op.drop_column("backend_id")
        batch_op.drop_column("match_type")

    with op.batch_alter_table("edge", schema=None) as batch_op:
        batch_op.drop_index("ix_edge_backend_id")
