"""Rendered list items, cached per process.

A list page costs, per item, far more to render than to read: loading the record, its
`to_api()`, validating it against the response schema and serialising it take ~3x the row
fetch (bench/README.md). Most list items do not change between two reads, so for resources
whose API shape is a *pure function of the row and the base URL* (no clock, no other rows, no
per-request state: the model says so with `CACHED_RENDERING = True`, models/base.py), the JSON
of each item is kept once it has been rendered and validated, and reused while the row reads
back the same:

- `tunnelgw.services.crud.read_page` answers an unfiltered list of such a model with a `Page`:
  the raw result rows as the driver returned them (SQLite only: they are hashable tuples of
  the stored values), not loaded.
- The pipeline (tunnelgw.http.pipeline) turns the page into the response body. It hands in the item
  validator of the operation's response schema (compiled from openapi.yaml like every response
  validator) and the page looks each row up under (that validator, the model, the base URL,
  the whole row). A miss loads the record, renders it, validates the rendering (a failure is
  the usual non-conforming response, 500) and stores its JSON as an `orjson.Fragment`; a hit
  is that same JSON. The envelope is validated on every response against the operation's
  response schema with the items left to the item validator. So every byte sent was
  validated: the envelope now, each item when this process first produced that exact
  rendering, by the same schema.
- A row changed in the database reads back as another tuple: a miss, rendered afresh (the
  stale entry ages out). The key holds the whole row, `account_id` included, and rows come
  from the account's own query: an entry is only ever served for the row it was rendered from.
- Bounded: entries weigh their JSON, their key row and a fixed overhead (`weight`, which
  slightly overestimates what tracemalloc sees); past `MAX_BYTES` in all the least recently
  used are evicted. An HTTP response backend of the benchmark weighs ~1.2 KB, so the default
  8 MiB holds ~7,000 such items per worker. An item that alone would weigh more than
  `MAX_ITEM_BYTES` is rendered every time and not kept.

The output is byte for byte what `orjson.dumps` of the rendered envelope gives.
"""

from __future__ import annotations

import functools
import sys
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

import orjson
from sqlalchemy import Float, Numeric

# The documented bound of the cache of one process (each worker has its own).
MAX_BYTES = 8 * 1024 * 1024
MAX_ITEM_BYTES = 64 * 1024
# An entry's cost besides its JSON and its row's values: the key tuples, the Fragment, the
# OrderedDict's node and hash table slot (measured ~250 bytes on CPython 3.11; rounded up).
ENTRY_OVERHEAD = 320

# (scope, row): the scope is (the item validator, the model, the base URL).
Key = tuple[Any, tuple[Any, ...]]

# Checks one rendered item (its API shape, its index in the page); raises if it is invalid.
ItemCheck = Callable[[dict[str, Any], int], None]


class RenderCache:
    """A bounded LRU from (scope, row) to the item's JSON (see the module docstring)."""

    __slots__ = ("entries", "max_bytes", "max_item_bytes", "size")

    def __init__(self, max_bytes: int = MAX_BYTES, max_item_bytes: int = MAX_ITEM_BYTES) -> None:
        # key -> (the item's JSON, the entry's weight)
        self.entries: OrderedDict[Key, tuple[orjson.Fragment, int]] = OrderedDict()
        self.max_bytes = max_bytes
        self.max_item_bytes = max_item_bytes
        self.size = 0  # the weight of the entries, in bytes

    def __len__(self) -> int:
        return len(self.entries)

    def store(self, key: Key, data: bytes) -> orjson.Fragment:
        """The fragment of `data`, kept under `key` unless it weighs too much."""
        cost = weight(key[1], data)
        if cost > self.max_item_bytes or key in self.entries:
            return orjson.Fragment(data)
        # A copy: the bytes orjson.dumps returns keep its whole output buffer (4 KiB at least).
        fragment = orjson.Fragment(bytes(memoryview(data)))
        entries = self.entries
        entries[key] = (fragment, cost)
        self.size += cost
        while self.size > self.max_bytes:
            self.size -= entries.popitem(last=False)[1][1]
        return fragment

    def clear(self) -> None:
        self.entries.clear()
        self.size = 0


def weight(row: tuple[Any, ...], data: bytes) -> int:
    """The bytes an entry of `row` rendered as `data` is counted for."""
    return (
        len(data) + sys.getsizeof(row) + sum(sys.getsizeof(value) for value in row) + ENTRY_OVERHEAD
    )


CACHE = RenderCache()


def cacheable(model: Any) -> bool:
    """Whether `model`'s list items may be cached: it opts in (`CACHED_RENDERING`), and none
    of its columns is a float (rows are compared as tuples: 0.0 equals -0.0, which renders
    differently)."""
    return bool(getattr(model, "CACHED_RENDERING", False)) and not _has_floats(model)


@functools.cache
def _has_floats(model: Any) -> bool:
    return any(isinstance(c.type, Float | Numeric) for c in model.__table__.columns)


class Page:
    """A list page whose items render through the cache (made by crud.read_page, turned
    into the body by the pipeline with `dumps`; `as_dict` renders it the ordinary way)."""

    __slots__ = ("base", "key", "load", "model", "next_page_uri", "rows", "uri")

    def __init__(
        self,
        model: Any,
        key: str,
        rows: Sequence[tuple[Any, ...]],
        load: Callable[[Sequence[Any]], Any],
        *,
        base: str,
        uri: str,
        next_page_uri: str | None,
    ) -> None:
        self.model = model
        self.key = key  # the envelope's item list key (`backends`)
        self.rows = rows
        self.load = load  # raw row -> record
        self.base = base  # the base URL the items are rendered with (part of the cache key)
        self.uri = uri
        self.next_page_uri = next_page_uri

    def as_dict(self) -> dict[str, Any]:
        """The envelope with each item rendered afresh (no cache)."""
        load = self.load
        return self.envelope([load(row).to_api() for row in self.rows])

    def items(
        self, check: ItemCheck, scope: object, cache: RenderCache | None = None
    ) -> list[orjson.Fragment]:
        """The item JSON of each row: cached under (`scope`, model, base URL, row), else
        rendered, passed to `check` and cached. `scope` stands for `check` (the caller's
        item validator): renderings checked by one validator are never served under another."""
        cache = CACHE if cache is None else cache
        entries = cache.entries
        get, touch = entries.get, entries.move_to_end
        prefix = (scope, self.model, self.base)
        out: list[orjson.Fragment] = []
        append = out.append
        for row in self.rows:
            key = (prefix, row)
            entry = get(key)
            if entry is None:
                api = self.load(row).to_api()
                check(api, len(out))
                append(cache.store(key, orjson.dumps(api)))
            else:
                touch(key)
                append(entry[0])
        return out

    def envelope(self, items: list[Any]) -> dict[str, Any]:
        return {self.key: items, "uri": self.uri, "next_page_uri": self.next_page_uri}
