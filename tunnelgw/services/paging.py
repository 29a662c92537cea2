"""Keyset paging, the one pager of every list: the cursor, the page's rows (one look-ahead row
decides `next_page_uri`), and the list envelope with its links."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import Any, TypeVar

from tunnelgw.core import ids, urls
from tunnelgw.core.errors import ApiError, Code
from tunnelgw.models.base import AccountScoped
from tunnelgw.services.auth import Caller
from tunnelgw.storage.unit import Unit

R = TypeVar("R", bound=AccountScoped)

MAX_LIMIT = 100

# Given a page's rows and the read unit, how to render each row: for lists whose items show
# related rows, loaded for the whole page at once (e.g. a subscription's sources).
Renderer = Callable[[Unit, list[Any]], Awaitable[Callable[[Any], dict[str, Any]]]]


def cursor(prefix: str, before_id: str | None) -> str | None:
    """The keyset cursor `before_id` of a list of ids `<prefix>_...`; ApiError(400) if it is
    malformed."""
    value = before_id
    if value and not ids.is_valid(value, prefix):
        raise ApiError(
            Code.INVALID_PARAMETER,
            f"before_id must be an id of this list ({prefix}_...).",
            param="before_id",
        )
    return value or None


async def page_rows(
    unit: Unit,
    model: type[R],
    caller: Caller,
    limit: int,
    before_id: str | None = None,
    *,
    prefix: str | None = None,
) -> tuple[list[R], bool]:
    """The rows of one page of the caller's rows, newest first, and whether more follow.

    Keyset paging on the id (ids sort in creation order), looking one row ahead to decide
    `next_page_uri`. A well-formed cursor need not exist any more: paging goes on from its
    position when the row it names was deleted in between. `prefix` as for `keyset_rows`."""
    start = cursor(prefix or model.PREFIX, before_id)
    rows = await keyset_rows(unit, model, caller.account_id, start, limit + 1, prefix=prefix)
    return rows[:limit], len(rows) > limit


async def keyset_rows(
    unit: Unit,
    model: type[R],
    account_id: str,
    start: str | None,
    count: int,
    *,
    prefix: str | None = None,
) -> list[R]:
    """Up to `count` rows of the account older than `start` (None: from the newest), newest
    first: keyset on the (account_id, id) index. `prefix` keeps the rows whose ids have that
    prefix, in a table holding several kinds (edges): ids sort by prefix first, so they are
    one range of the same index."""
    condition, args = keyset(unit.mark, account_id, start, count, prefix)
    return await unit.select(model, condition, args)


def keyset(
    mark: str, account_id: str, start: str | None, count: int, prefix: str | None
) -> tuple[str, list[Any]]:
    """The condition (ordered, limited) and arguments of `keyset_rows`."""
    if prefix is not None:
        # `_` < '`': every id `<prefix>_...` lies between these two bounds.
        condition = f'"account_id" = {mark} AND "id" > {mark} AND "id" < {mark}'
        args: list[Any] = [account_id, f"{prefix}_", start or f"{prefix}`", count]
    elif start is None:
        condition, args = f'"account_id" = {mark}', [account_id, count]
    else:
        condition = f'"account_id" = {mark} AND "id" < {mark}'
        args = [account_id, start, count]
    return f'{condition} ORDER BY "id" DESC LIMIT {mark}', args


def envelope(
    key: str,
    path: str,
    rows: Iterable[Any],
    limit: int,
    *,
    more: bool,
    render: Callable[[Any], dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The list envelope of a page of `rows`, each rendered by `render` (default: the row's
    `to_api()`)."""
    items = [row.to_api() if render is None else render(row) for row in rows]
    uri, next_uri = links(path, limit, items[-1]["id"] if more else None)
    return {key: items, "uri": uri, "next_page_uri": next_uri}


def links(path: str, limit: int, last_id: str | None) -> tuple[str, str | None]:
    """A page's `uri` and `next_page_uri` (None when it is the last: no `last_id`)."""
    next_uri = None if last_id is None else urls.absolute(path, limit=limit, before_id=last_id)
    return urls.absolute(path), next_uri
