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
- The pipeline (tunnelgw.http.pipeline) turns the page into the response body. It hands in
  the item validator of the operation's response schema (compiled from openapi.yaml like
  every response validator) and the page looks each row up by its id under (that validator,
  the model, the base URL); an entry is served only for the very row it was rendered from
  (the whole row compares equal; a key of the whole row, hashed on every read, cost a
  list page ~1/3 more in lookups). A miss loads the record, renders it, validates the
  rendering (a failure is the usual non-conforming response, 500) and stores its JSON as an
  `orjson.Fragment`; a hit is that same JSON. The envelope is validated on every response
  against the operation's response schema with the items left to the item validator. So
  every byte sent was validated: the envelope now, each item when this process first
  produced that exact rendering, by the same schema.
- A row changed in the database reads back as another tuple: a miss, rendered afresh (its
  entry then replaces the stale one). An entry holds the whole row, `account_id` included,
  and rows come from the account's own query: an entry is only ever served for the row it
  was rendered from.
- Bounded: entries weigh their JSON, their row and a fixed overhead (`weight`, which
  slightly overestimates what tracemalloc sees); past `MAX_BYTES` in all, what was least
  recently read goes first (`RenderCache`: two generations, each up to half the bound). An
  HTTP response backend of the benchmark weighs ~1.2 KB, so the default 8 MiB holds ~7,000
  such items per worker. An item that alone would weigh more than `MAX_ITEM_BYTES` is
  rendered every time and not kept.

The output is byte for byte what `orjson.dumps` of the rendered envelope gives.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Hashable, Sequence
from typing import Any

import orjson
from sqlalchemy import Float, Numeric

# The documented bound of the cache of one process (each worker has its own).
MAX_BYTES = 8 * 1024 * 1024
MAX_ITEM_BYTES = 64 * 1024
# An entry's cost besides its JSON and its row's values: the entry tuple, the Fragment and
# its dict slot (measured ~250 bytes on CPython 3.11 with the former key tuples; rounded up).
ENTRY_OVERHEAD = 320

# The scope of an entry: (the item validator, the model, the base URL).
Scope = Hashable
# An entry: the item's JSON, its weight in bytes, the row it was rendered from.
Entry = tuple[orjson.Fragment, int, tuple[Any, ...]]
_NONE: dict[str, Entry] = {}

# Checks one rendered item (its API shape, its index in the page); raises if it is invalid.
ItemCheck = Callable[[dict[str, Any], int], None]


class RenderCache:
    """A bounded cache of item JSON by scope and row id (see the module docstring): two
    generations of plain dicts (scope -> row id -> entry), each up to half the bound.
    Entries go into the new one; a hit in the old one moves its entry into the new one; once
    the new one is full it becomes the old one, and the old one's entries are dropped. So
    what was not read for a generation goes first, and a hit in the new generation is one
    lookup (an LRU's reordering on every hit cost ~13 us a list page of 100,
    bench/README.md)."""

    __slots__ = ("max_bytes", "max_item_bytes", "new", "new_size", "old", "old_size")

    def __init__(self, max_bytes: int = MAX_BYTES, max_item_bytes: int = MAX_ITEM_BYTES) -> None:
        self.new: dict[Scope, dict[str, Entry]] = {}
        self.old: dict[Scope, dict[str, Entry]] = {}
        self.new_size = self.old_size = 0  # the weight of each generation's entries, in bytes
        self.max_bytes = max_bytes
        self.max_item_bytes = max_item_bytes

    def __len__(self) -> int:
        return sum(map(len, self.new.values())) + sum(map(len, self.old.values()))

    def kept(self, scope: Scope, row_id: str, row: tuple[Any, ...]) -> bool:
        """Whether the rendering of `row` is kept (in either generation)."""
        return any(_found(gen, scope, row_id, row) is not None for gen in (self.new, self.old))

    @property
    def size(self) -> int:
        return self.new_size + self.old_size

    def get(self, scope: Scope, row_id: str, row: tuple[Any, ...]) -> orjson.Fragment | None:
        """The JSON kept for `row` (an entry of the old generation moves to the new)."""
        entry = _found(self.new, scope, row_id, row)
        if entry is not None:
            return entry[0]
        entry = _found(self.old, scope, row_id, row)
        if entry is None:
            return None
        del self.old[scope][row_id]
        self.old_size -= entry[1]
        self._add(scope, row_id, entry)
        return entry[0]

    def store(
        self, scope: Scope, row_id: str, row: tuple[Any, ...], data: bytes
    ) -> orjson.Fragment:
        """The fragment of `data`, the JSON of `row`, kept unless it weighs too much."""
        cost = weight(row, data)
        if cost > self.max_item_bytes or self.kept(scope, row_id, row):
            return orjson.Fragment(data)
        # A copy: the bytes orjson.dumps returns keep its whole output buffer (4 KiB at least).
        fragment = orjson.Fragment(bytes(memoryview(data)))
        self._add(scope, row_id, (fragment, cost, row))
        return fragment

    def _add(self, scope: Scope, row_id: str, entry: Entry) -> None:
        if self.new_size + entry[1] > self.max_bytes // 2:  # the new generation is full
            self.old, self.old_size = self.new, self.new_size
            self.new, self.new_size = {}, 0
        entries = self.new.get(scope)
        if entries is None:
            entries = self.new[scope] = {}
        replaced = entries.get(row_id)
        if replaced is not None:  # a stale rendering of the row
            self.new_size -= replaced[1]
        entries[row_id] = entry
        self.new_size += entry[1]

    def clear(self) -> None:
        self.new, self.old = {}, {}
        self.new_size = self.old_size = 0


def _found(
    generation: dict[Scope, dict[str, Entry]], scope: Scope, row_id: str, row: tuple[Any, ...]
) -> Entry | None:
    """The entry of `row` in `generation`; None unless it was rendered from that very row
    (`Page.items` makes the same check inline for the new generation, once per row)."""
    entry = generation.get(scope, _NONE).get(row_id)
    return entry if entry is not None and entry[2] == row else None


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

    __slots__ = ("base", "id_at", "key", "load", "model", "next_page_uri", "rows", "uri")

    def __init__(
        self,
        model: Any,
        key: str,
        rows: Sequence[tuple[Any, ...]],
        load: Callable[[Sequence[Any]], Any],
        *,
        id_at: int,
        base: str,
        uri: str,
        next_page_uri: str | None,
    ) -> None:
        self.model = model
        self.key = key  # the envelope's item list key (`backends`)
        self.rows = rows
        self.load = load  # raw row -> record
        self.id_at = id_at  # the position of the id in a row
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
        """The item JSON of each row: cached under (`scope`, model, base URL) and the row's
        id, else rendered, passed to `check` and cached. `scope` stands for `check` (the
        caller's item validator): renderings checked by one validator are never served under
        another."""
        cache = CACHE if cache is None else cache
        prefix = (scope, self.model, self.base)
        id_at = self.id_at
        out: list[orjson.Fragment] = []
        append = out.append
        kept = cache.new.get(prefix, _NONE)  # hits in the new generation: one lookup each
        for row in self.rows:
            row_id = row[id_at]
            entry = kept.get(row_id)
            if entry is not None and entry[2] == row:  # `_found`, inline: the hot path
                append(entry[0])
                continue
            fragment = cache.get(prefix, row_id, row)
            if fragment is None:
                api = self.load(row).to_api()
                check(api, len(out))
                fragment = cache.store(prefix, row_id, row, orjson.dumps(api))
            append(fragment)
            kept = cache.new.get(prefix, _NONE)  # a store or a move may have made it
        return out

    def envelope(self, items: list[Any]) -> dict[str, Any]:
        return {self.key: items, "uri": self.uri, "next_page_uri": self.next_page_uri}
