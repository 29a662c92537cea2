"""Account snapshots (tunnelgw.services.snapshots): every secret-looking column is marked
secret, the values' JSON forms, and the deterministic sealing of secrets."""

from __future__ import annotations

import os
import re
from datetime import UTC, datetime

import pytest
from sqlalchemy import JSON, Boolean, DateTime, Float, Integer, LargeBinary, String
from sqlmodel import AutoString, SQLModel

from tunnelgw import models
from tunnelgw.crypto import keys
from tunnelgw.models.base import SECRET
from tunnelgw.services import snapshots

models.load_all()  # every table on the metadata

SECRET_NAMES = re.compile(r".*_hash|wrapped_.*|.*sealed.*|.*secret.*|.*private_key.*")
# Columns named like secrets that are not: a key's type, an id.
NOT_SECRETS = {
    ("agent_ingress", "cert_private_key_type"),
    ("reserved_domain", "cert_private_key_type"),
    ("tls_certificate", "private_key_type"),
}


def test_every_column_named_like_a_secret_is_marked():
    for table in SQLModel.metadata.sorted_tables:
        for column in table.columns:
            if (table.name, column.name) in NOT_SECRETS:
                assert SECRET not in column.info
                continue
            if SECRET_NAMES.fullmatch(column.name):
                assert SECRET in column.info, f"{table.name}.{column.name} is not marked secret"


def test_secret_columns_can_be_left_out():
    """A left-out secret is an empty blob or a marked string; its row is named by its id."""
    for table in snapshots.tables():
        secrets = snapshots.secret_columns(table)
        if not secrets:
            continue
        assert [c.name for c in table.primary_key.columns] == ["id"], table.name
        for name, effect in secrets.items():
            assert effect.strip(), (table.name, name)
            column_type = table.c[name].type
            assert isinstance(column_type, LargeBinary | String | AutoString), (table.name, name)
            value = snapshots.left_out_value(table, name, "x_1")
            assert snapshots.is_left_out(value)
    assert not snapshots.is_left_out(b"\x01")
    assert not snapshots.is_left_out("a" * 64)


def test_every_account_table_is_exported_or_excluded():
    exported = {t.name for t in snapshots.tables()}
    for table in SQLModel.metadata.sorted_tables:
        if "account_id" in table.c:
            assert (table.name in exported) != (table.name in snapshots.EXCLUDED), table.name
        else:
            assert table.name not in exported
    assert exported >= snapshots.KEPT
    for table in snapshots.tables():
        assert snapshots.model_of(str(table.name)).__table__ is table  # type: ignore[attr-defined]
    with pytest.raises(KeyError):
        snapshots.model_of("no_such_table")


@pytest.mark.parametrize(
    ("column_type", "stored", "shown"),
    [
        (DateTime(timezone=True), "2026-01-02 03:04:05.123456", "2026-01-02T03:04:05.123456Z"),
        (DateTime(), datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC), "2026-01-02T03:04:05.000000Z"),
        (LargeBinary(), b"\x00\xff", "AP8="),
        (JSON(), '{"b": [1, true]}', {"b": [1, True]}),
        (JSON(), {"b": 1}, {"b": 1}),
        (Boolean(), 1, True),
        (Integer(), 7, 7),
        (Float(), 0.5, 0.5),
        (String(), "x", "x"),
        (String(), None, None),
    ],
)  # fmt: skip
def test_values_in_their_json_form_and_back(column_type, stored, shown):
    assert snapshots.to_json(column_type, stored) == shown
    back = snapshots.from_json(column_type, shown)
    assert snapshots.to_json(column_type, back) == shown


@pytest.mark.parametrize(
    ("column_type", "value", "message"),
    [
        (DateTime(), 5, "is not an RFC 3339 time"),
        (DateTime(), "yesterday", "is not an RFC 3339 time"),
        (LargeBinary(), 5, "is not base64"),
        (LargeBinary(), "not base64!", "is not base64"),
        (Integer(), True, "is not of the column's type (Integer)"),
        (Integer(), "1", "is not of the column's type (Integer)"),
        (Boolean(), 1, "is not of the column's type (Boolean)"),
        (String(), 1, "is not of the column's type (String)"),
    ],
)
def test_values_of_the_wrong_type_are_refused(column_type, value, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        snapshots.from_json(column_type, value)


def test_sealing_is_deterministic_and_bound_to_its_key_and_row():
    kek, other = os.urandom(32), os.urandom(32)
    ad = snapshots.associated_data("api_key", "token_hash", "ak_1")
    sealed = keys.seal(kek, b"hash", ad)
    assert keys.seal(kek, b"hash", ad) == sealed
    assert b"hash" not in sealed
    assert keys.unseal(kek, sealed, ad) == b"hash"
    for wrong_key, wrong_ad in (
        (other, ad),
        (kek, snapshots.associated_data("api_key", "token_hash", "ak_2")),
    ):
        with pytest.raises(keys.UnwrapError):
            keys.unseal(wrong_key, sealed, wrong_ad)
    assert keys.fingerprint(kek) == keys.fingerprint(kek) != keys.fingerprint(other)
    assert len(keys.fingerprint(kek)) == 32
