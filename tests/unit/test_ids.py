"""Ids: prefix + 27 base62, strictly increasing within a process, sortable as bytes."""

from __future__ import annotations

import pytest

from tunnelgw import ids


def test_shape_and_validation():
    value = ids.new_id("ak")
    assert value.startswith("ak_")
    assert len(value) == 3 + 27
    assert ids.is_valid(value, "ak")
    assert not ids.is_valid(value, "bkdhr")
    assert ids.prefix_of(value) == "ak"
    for bad in ("ak_", "ak_" + "0" * 26, "ak_" + "!" * 27, "ak" + "0" * 28, "", "_" + "0" * 27):
        assert not ids.is_valid(bad, "ak")
        assert ids.prefix_of(bad) is None


def test_ids_increase_in_creation_order_even_within_a_millisecond():
    made = [ids.new_id("x") for _ in range(5000)]
    assert made == sorted(made)
    assert len(set(made)) == len(made)


def test_clock_going_back_keeps_ids_increasing(monkeypatch):
    first = ids.new_id("x")
    monkeypatch.setattr(ids.time, "time_ns", lambda: 0)
    assert ids.new_id("x") > first


def test_base62_round_trip_width():
    assert ids.encode_base62(0, 3) == "000"
    assert ids.encode_base62(61, 1) == "z"
    with pytest.raises(ValueError, match="does not fit"):
        ids.encode_base62(62, 1)


def test_secrets_are_base62_and_distinct():
    a, b = ids.new_secret(), ids.new_secret()
    assert a != b
    assert len(a) == 43
    assert set(a) <= set(ids.ALPHABET)
