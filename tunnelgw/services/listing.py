"""Filtered lists: `?filter=<CEL>` on every list (and the endpoint list's exact-match `id`,
`url`, `ids`, `urls`), on the same keyset paging as unfiltered lists.

A page holds up to `limit` matching items, newest first. The rows are scanned in id order
from the cursor, in batches, each row rendered once (its API shape, which the expression is
evaluated against as `obj`) and tested. The scan is bounded: at most `MAX_SCAN` rows per
request. So:

- `limit` matches found and one more match seen after them: the page, with `next_page_uri`
  after its last item (the look-ahead, as unfiltered lists do);
- the table ends: the matches found (perhaps none) and `next_page_uri` null;
- the bound is reached first: the matches found so far and a `next_page_uri` that goes on
  after the last row scanned (not the last match), so no row is scanned twice. Only here can
  a page be empty while `next_page_uri` is not null: a sparse filter over many rows answers
  in bounded time instead of scanning the whole table in one request. Keep following
  `next_page_uri` until it is null.

Unfiltered lists do not come here (tunnelgw.services.crud.page), so they pay nothing for this.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from tunnelgw.core import spec, urls
from tunnelgw.models.base import AccountScoped
from tunnelgw.rules.filtering import Filter, compile_filter
from tunnelgw.services.auth import Caller
from tunnelgw.services.paging import Renderer, cursor, keyset_rows
from tunnelgw.storage import db
from tunnelgw.storage.unit import Unit

# At most this many rows are read per filtered request (the documented bound).
MAX_SCAN = 5000
FIRST_BATCH = 200  # or limit + 1 when larger
MAX_BATCH = 1000

Prepare = Callable[[list[Any]], Awaitable[list[Any]]]
# The rows of a list that is not all of the account's rows (e.g. one vault's secrets): given
# the read unit, the cursor (None: from the newest) and a count, up to that many rows older
# than the cursor, newest first.
Fetch = Callable[[Unit, str | None, int], Awaitable[list[Any]]]
Match = Callable[[dict[str, Any]], bool]


@functools.cache
def _spec() -> dict[str, Any]:
    return spec.load()


def compile_for(expression: str, schema: str) -> Filter:
    """`expression` compiled against the spec's item schema `schema` (e.g. "ApiKey");
    ApiError(400 ERR_FILTER_...) when it is not a valid filter for those items."""
    return compile_filter(expression, {"$ref": f"#/components/schemas/{schema}"}, spec=_spec())


@dataclass(frozen=True)
class Found:
    items: list[dict[str, Any]]
    next_before: str | None  # the next page's before_id; None on the last page


async def scan(
    caller: Caller,
    model: type[AccountScoped],
    start: str | None,
    limit: int,
    match: Match,
    *,
    prepare: Prepare | None = None,
    renderer: Renderer | None = None,
    prefix: str | None = None,
    fetch: Fetch | None = None,
) -> Found:
    """Up to `limit` items of the caller's rows older than `start` for which `match` holds
    (see the module docstring for the bound and `next_page_uri`)."""
    items: list[dict[str, Any]] = []
    cursor, scanned = start, 0
    batch = max(limit + 1, FIRST_BATCH)
    while scanned < MAX_SCAN:
        size = min(batch, MAX_SCAN - scanned)
        async with db.read() as unit:
            if fetch is not None:
                rows = await fetch(unit, cursor, size)
            else:
                rows = await keyset_rows(
                    unit, model, caller.account_id, cursor, size, prefix=prefix
                )
        if prepare is not None and rows:
            rows = await prepare(rows)
        render: Callable[[Any], dict[str, Any]] = _to_api
        if renderer is not None and rows:
            async with db.read() as unit:
                render = await renderer(unit, rows)
        for row in rows:
            item = render(row)
            if match(item):
                if len(items) == limit:  # a further match: the page is full
                    return Found(items, items[-1]["id"])
                items.append(item)
            cursor = row.id
        scanned += len(rows)
        if len(rows) < size:
            return Found(items, None)
        batch = min(batch * 2, MAX_BATCH)
    return Found(items, cursor)


def _to_api(row: Any) -> dict[str, Any]:
    api: dict[str, Any] = row.to_api()
    return api


def _exact(field: str, values: set[str], item: dict[str, Any]) -> bool:
    return item.get(field) in values


def envelope(
    key: str, path: str, found: Found, limit: int, query: list[tuple[str, str]]
) -> dict[str, Any]:
    """The list envelope of a filtered page; `next_page_uri` keeps the filter (`query`)."""
    next_uri = None
    if found.next_before is not None:
        params = [("limit", str(limit)), ("before_id", found.next_before), *query]
        next_uri = f"{urls.absolute(path)}?{urlencode(params)}"
    return {key: found.items, "uri": urls.absolute(path), "next_page_uri": next_uri}


async def read_filtered(
    caller: Caller,
    model: type[AccountScoped],
    key: str,
    limit: int,
    before_id: str | None,
    expression: str | None,
    *,
    exact: dict[str, set[str]] | None = None,
    keep: list[tuple[str, str]] | None = None,
    prepare: Prepare | None = None,
    renderer: Renderer | None = None,
    prefix: str | None = None,
    schema: str | None = None,
    path: str | None = None,
    fetch: Fetch | None = None,
) -> dict[str, Any]:
    """A filtered LIST: `expression` (CEL, against the item schema `schema`, by default named
    like the model) and `exact` (item field -> accepted values) must both hold; `keep` are the
    query parameters `next_page_uri` repeats besides `filter`. `prefix` (one kind of a shared
    table) and `path` (its collection path) as for tunnelgw.services.crud.read_page; `fetch`
    reads the rows of a list narrower than the account's (`Fetch`)."""
    start = cursor(prefix or model.PREFIX, before_id)
    query: list[tuple[str, str]] = []
    tests: list[Match] = []
    if expression is not None:
        compiled = compile_for(expression, schema or model.__name__)
        tests.append(compiled.matches)
        query.append(("filter", expression))
    for field, values in (exact or {}).items():
        tests.append(functools.partial(_exact, field, values))
    query += keep or []
    found = await scan(
        caller,
        model,
        start,
        limit,
        lambda item: all(test(item) for test in tests),
        prepare=prepare,
        renderer=renderer,
        prefix=prefix,
        fetch=fetch,
    )
    return envelope(key, path or model.PATH, found, limit, query)
