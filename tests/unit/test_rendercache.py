"""The render cache's bound and eviction, and which models may use it."""

from __future__ import annotations

import tracemalloc
from typing import Any

import orjson
import pytest

from tunnelgw import models
from tunnelgw.models import ApiKey, FaultRule, HttpResponseBackend
from tunnelgw.services import rendercache
from tunnelgw.services.rendercache import RenderCache, weight


def _key(n: int) -> tuple[Any, str, tuple[Any, ...]]:
    """(scope, row id, row)."""
    row = (f"id_{n:04d}", "account", n)
    return ("scope", row[0], row)


def _kept(cache: RenderCache, n: int) -> bool:
    return cache.kept(*_key(n))


def test_the_cap_holds_and_the_oldest_generation_goes_first():
    data = b'{"id":"x"}' * 10
    one = weight(_key(0)[2], data)
    cache = RenderCache(max_bytes=one * 6)  # generations of 3 entries
    for n in range(50):
        cache.store(*_key(n), data)
        assert cache.size <= cache.max_bytes
        assert len(cache) <= 6
    # The newest generation (48, 49) and the one before it (45, 46, 47) are kept.
    assert {n for n in range(50) if _kept(cache, n)} == {45, 46, 47, 48, 49}
    assert cache.get(*_key(44)) is None
    cache.store(*_key(50), data)  # fills the new generation
    assert {n for n in range(51) if _kept(cache, n)} == {45, 46, 47, 48, 49, 50}
    cache.store(*_key(51), data)  # it is full: it becomes the old one, and 45-47 go
    assert {n for n in range(52) if _kept(cache, n)} == {48, 49, 50, 51}
    cache.clear()
    assert (len(cache), cache.size) == (0, 0)


def test_a_hit_keeps_an_entry_alive():
    data = b"[1]"
    cache = RenderCache(max_bytes=weight(_key(0)[2], data) * 4)  # generations of 2 entries
    for n in range(4):
        cache.store(*_key(n), data)
    # 0 and 1 are the old generation, 2 and 3 the new (full) one: a hit on 0 moves it into
    # a new generation, and 1, never read, goes with the oldest.
    assert cache.get(*_key(0)) is not None
    cache.store(*_key(4), data)
    cache.store(*_key(5), data)  # 0 is still kept, a generation later
    assert _kept(cache, 0)
    assert not _kept(cache, 1)
    assert cache.size <= cache.max_bytes


def test_an_item_over_the_item_bound_is_served_but_not_kept():
    cache = RenderCache(max_bytes=1 << 20, max_item_bytes=1000)
    big = orjson.dumps("x" * 2000)
    fragment = cache.store(*_key(0), big)
    assert orjson.dumps([fragment]) == b"[" + big + b"]"
    assert len(cache) == 0


def test_only_models_that_opt_in_and_have_no_float_columns_are_cached(monkeypatch):
    assert rendercache.cacheable(HttpResponseBackend)
    assert not rendercache.cacheable(ApiKey)  # not opted in
    monkeypatch.setattr(FaultRule, "CACHED_RENDERING", True, raising=False)
    assert not rendercache.cacheable(FaultRule)  # `probability` is a float


@pytest.mark.parametrize(
    "model",
    [m for m in models.RESOURCES if m.CACHED_RENDERING],
)
def test_opted_in_models_are_cacheable(model):
    assert rendercache.cacheable(model)


def test_the_cap_bounds_the_memory_really_held():
    """The weights are not optimistic: the cache's traced memory stays within its cap."""
    cache = RenderCache(max_bytes=256 * 1024)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for n in range(3000):
            row = (f"bkdhr_{n:027d}", "acct_" + "x" * 27, f"2026-11-23 14:27:{n % 60:02d}.000000")
            data = orjson.dumps({"id": row[0], "uri": "http://h/" + row[0], "n": n})
            cache.store("scope", row[0], row, data)
            del row, data
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert cache.size <= cache.max_bytes
    assert held <= cache.max_bytes * 1.1, held


def test_an_entry_is_served_only_for_the_row_it_was_rendered_from():
    """A row read back changed (same id) is a miss, and its new rendering replaces the
    stale one; the cache's weight counts the row once."""
    cache = RenderCache(max_bytes=1 << 20)
    scope, row_id, row = _key(0)
    cache.store(scope, row_id, row, b'{"n":0}')
    changed = (row_id, "account", 1)
    assert cache.get(scope, row_id, changed) is None
    assert cache.get("another scope", row_id, row) is None
    cache.store(scope, row_id, changed, b'{"n":1}')
    assert orjson.dumps([cache.get(scope, row_id, changed)]) == b'[{"n":1}]'
    assert cache.get(scope, row_id, row) is None
    assert (len(cache), cache.size) == (1, weight(changed, b'{"n":1}'))
