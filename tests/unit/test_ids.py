"""Ids: prefix + 27 base62, strictly increasing within a process, sortable as bytes."""

from __future__ import annotations

import os
import time

import pytest

from tunnelgw.core import ids


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


def _value(id_: str) -> int:
    number = 0
    for char in id_.partition("_")[2]:
        number = number * 62 + ids.ALPHABET.index(char)
    return number


def test_ids_following_one_take_the_values_it_reserved(monkeypatch):
    """An event's id and its deliveries' ids: one draw, the others right after the first,
    before any id made later."""
    before = ids.new_id("x")
    event = ids.new_id("ev", reserve=10)
    after = ids.new_id("x")
    deliveries = ids.following(event, "evd", 10)
    assert ids.is_valid(event, "ev")
    assert all(ids.is_valid(value, "evd") for value in deliveries)
    values = [_value(event), *(_value(value) for value in deliveries)]
    assert values == list(range(values[0], values[0] + 11))
    assert _value(before) < values[0]
    assert values[-1] < _value(after)
    assert ids.following(event, "evd", 0) == []
    # Where the last 4 digits carry, every id is encoded whole.
    top = (_value(after) // 62**4 + 1) * 62**4 - 2
    monkeypatch.setattr(ids, "_next_value", lambda count: top)
    carried = ids.following(ids.new_id("x", reserve=2), "x", 2)
    assert [_value(value) for value in carried] == [top + 1, top + 2]
    assert carried[1].endswith("0000")
    assert carried[0].endswith("zzzz")


def test_base62_decodes_what_it_encodes():
    for value in (0, 61, 62, 62**27 - 1, ids._next_value()):
        assert ids.decode_base62(ids.encode_base62(value, 27)) == value


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


# Seeded mode (deterministic runs).


@pytest.fixture
def unseeded():
    """Start and leave the process in random mode, so no seed leaks to other tests."""
    ids.seed(None)
    yield
    ids.seed(None)


def _sample() -> list:
    return [
        ids.new_id("ak"),
        ids.new_id("rd"),
        ids.new_operation_id(),
        ids.new_secret(),
        ids.random_source("dns_targets").choice("abcdefghij" * 10),
        ids.random_source("ports").randint(20000, 29999),
        ids.random_source("serials").getrandbits(64),
        ids.new_id("ak"),
    ]


def test_the_same_seed_repeats_everything_another_does_not(unseeded):
    ids.seed("snapshot")
    first = _sample()
    ids.seed("snapshot")
    assert _sample() == first
    ids.seed(42)
    forty_two = _sample()
    ids.seed("42")  # a seed is its text
    assert _sample() == forty_two
    ids.seed("other")
    other = _sample()
    assert all(a != b for a, b in zip(first, other, strict=True))


def test_seeded_ids_are_well_formed_increasing_and_start_at_the_epoch(unseeded):
    ids.seed("x")
    made = [ids.new_id("x") for _ in range(2000)]
    assert made == sorted(made)
    assert len(set(made)) == len(made)
    assert all(ids.is_valid(value, "x") for value in made)
    # A simulated millisecond per id, from 2026-01-01T00:00:00Z.
    assert _millisecond(made[0]) == ids.SEEDED_EPOCH_MS + 1
    assert _millisecond(made[-1]) == ids.SEEDED_EPOCH_MS + 2000


def _millisecond(value: str) -> int:
    return _value(value) >> 112


def test_seeded_ids_ignore_the_wall_clock(unseeded, monkeypatch):
    ids.seed("x")
    first = [ids.new_id("x") for _ in range(3)]
    monkeypatch.setattr(ids.time, "time_ns", lambda: 0)
    ids.seed("x")
    assert [ids.new_id("x") for _ in range(3)] == first


def test_seeded_ids_with_reserved_values_are_reproducible(unseeded):
    """In seeded mode an id that reserves values for the ids following it is the same for
    the same seed, and the ids made after it are too."""
    made = []
    for _ in range(2):
        ids.seed("x")
        event = ids.new_id("ev", reserve=3)
        made.append((event, ids.following(event, "evd", 3), ids.new_id("x")))
    assert made[0] == made[1]
    event, deliveries, after = made[0]
    assert _value(event) < _value(deliveries[0]) < _value(deliveries[2]) < _value(after)


def test_each_kind_of_value_has_its_own_stream(unseeded):
    """Extra operation ids (health checks) or tokens do not shift the ids, and so on."""
    ids.seed("s")
    plain = [ids.new_id("x"), ids.new_secret(), ids.random_source("ports").random()]
    ids.seed("s")
    for _ in range(5):
        ids.new_operation_id()
        ids.random_source("dns_targets").random()
    assert [ids.new_id("x"), ids.new_secret(), ids.random_source("ports").random()] == plain


def test_ensure_seeded_continues_a_running_sequence(unseeded):
    ids.ensure_seeded(None)
    ids.ensure_seeded("")
    assert ids.current_seed() is None
    ids.ensure_seeded("s")
    first = ids.new_id("x")
    ids.ensure_seeded("s")  # an app starting in a process the CLI seeded: no restart
    second = ids.new_id("x")
    assert second > first
    ids.seed("s")
    assert ids.new_id("x") == first
    ids.ensure_seeded("t")  # another seed restarts
    assert ids.current_seed() == "t"


def test_unseeding_returns_to_random_values(unseeded):
    import random

    assert isinstance(ids.random_source("ports"), random.SystemRandom)
    ids.seed("s")
    seeded = ids.new_id("x")
    assert not isinstance(ids.random_source("ports"), random.SystemRandom)
    ids.seed(None)
    assert ids.current_seed() is None
    assert isinstance(ids.random_source("ports"), random.SystemRandom)
    after = ids.new_id("x")
    assert after > seeded  # still increasing within the process
    assert ids.new_secret() != ids.new_secret()


def test_probe_operation_ids_do_not_shift_the_others(unseeded):
    ids.seed("s")
    plain = [ids.new_operation_id() for _ in range(3)]
    ids.seed("s")
    made = []
    for _ in range(3):
        ids.new_operation_id(probe=True)  # a readiness poll, any number of times
        made.append(ids.new_operation_id())
    assert made == plain


def test_one_millisecond_draws_random_bits_once(monkeypatch):
    """The ids of one millisecond follow the first, which alone draws random bits; the next
    millisecond draws anew and starts past them all."""
    draws: list[int] = []
    real = ids.secrets.randbits

    def randbits(k: int) -> int:
        draws.append(k)
        return real(k)

    now = [(time.time_ns() // 1_000_000 + 10) * 1_000_000]
    monkeypatch.setattr(ids.time, "time_ns", lambda: now[0])
    monkeypatch.setattr(ids.secrets, "randbits", randbits)
    made = [ids.new_id("x") for _ in range(3)]
    assert len(draws) == 1
    assert [_value(v) - _value(made[0]) for v in made] == [0, 1, 2]
    now[0] += 1_000_000
    later = ids.new_id("x")
    assert len(draws) == 2
    assert _value(made[0]) >> 112 == now[0] // 1_000_000 - 1
    assert _value(later) >> 112 == now[0] // 1_000_000
    assert later > made[-1]


def test_an_ids_digits_are_right_whether_its_head_was_encoded_before_or_not():
    """The head of an id's digits is kept for the next id that shares it: ids sharing it,
    ids not sharing it, and one sharing it again after another, each encoded whole."""
    base = ids._next_value()
    high_step = 62**4
    for value in (base, base + 1, base + high_step, base + 2, base + 2, 0, 62**27 - 1):
        assert ids._body(value) == ids.encode_base62(value, ids.BODY_LENGTH)


def test_a_forked_child_draws_its_own_ids(monkeypatch):
    """A child forked in the millisecond of its parent's last id does not make the id the
    parent makes next: it draws its own start."""
    now = (time.time_ns() // 1_000_000 + 10) * 1_000_000
    monkeypatch.setattr(ids.time, "time_ns", lambda: now)
    ids.new_id("x")
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its next id, then out at once
        os.write(write, ids.new_id("x").encode())
        os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    child = os.read(read, 100).decode()
    os.close(read)
    assert ids.is_valid(child, "x")
    assert child != ids.new_id("x")
