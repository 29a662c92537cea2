"""The shared CRUD steps every resource uses: get-or-404, apply a PATCH, list a page, and
whole get/list/update/delete operations built from them. Handlers call these instead of
writing queries.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

from sqlalchemy import bindparam, select

from models.base import AccountScoped
from tunnelgw import auth, db, ids, records, rendercache, urls
from tunnelgw.auth import Caller
from tunnelgw.db import Lock, Query, Unit
from tunnelgw.errors import ApiError, Code

R = TypeVar("R", bound=AccountScoped)
T = TypeVar("T")

# A JSON request body as Connexion passes it (None when the request had none).
Body = dict[str, Any] | None

MAX_LIMIT = 100

# What a list handler returns: the envelope, or a page the pipeline renders (rendercache).
Listed = dict[str, Any] | rendercache.Page


async def _of_caller(unit: Unit, model: type[R], caller: Caller, id_: str, lock: Lock) -> R | None:
    row = await unit.get(model, id_, lock=lock)
    return row if row is not None and row.account_id == caller.account_id else None


async def get_owned(
    unit: Unit, model: type[R], caller: Caller, id_: str, *, lock: Lock = False
) -> R:
    """The row `id_` of the caller's account; ApiError(404) if absent or another account's."""
    row = await _of_caller(unit, model, caller, id_, lock)
    if row is None:
        raise ApiError(Code.NOT_FOUND, f"No {model.__name__} with id {id_!r}.", id=id_)
    return row


async def get_reference(
    unit: Unit,
    model: type[R],
    caller: Caller,
    id_: str,
    field: str,
    *,
    lock: Lock = False,
) -> R:
    """The row `id_` named by the body field `field`; ApiError(404 ERR_REFERENCE_NOT_FOUND)
    if absent or another account's."""
    row = await _of_caller(unit, model, caller, id_, lock)
    if row is None:
        raise ApiError(
            Code.REFERENCE_NOT_FOUND,
            f"No {model.__name__} with id {id_!r} in this account.",
            field=field,
        )
    return row


async def taken(unit: Unit, column: Any, value: str) -> bool:
    """Whether a row of any account has `value` in the unique `column` (e.g. a domain)."""
    return (await unit.exec(_taken_query(column), {"value": value})).first() is not None


@functools.cache
def _taken_query(column: Any) -> Query:
    return Query(select(column).where(column == bindparam("value")).limit(1))


async def delete_owned(unit: Unit, model: type[R], caller: Caller, id_: str) -> None:
    """Delete the row `id_` of the caller's account; ApiError(404) if there is none."""
    await unit.delete(await get_owned(unit, model, caller, id_))


def apply_patch(row: Any, body: Mapping[str, Any], fields: Mapping[str, str]) -> None:
    """Set each API field present (and not null) in `body` on `row`.

    `fields` maps API names to attribute names (`{"metadata": "meta"}`).
    """
    for api_name, attr in fields.items():
        value = body.get(api_name)
        if value is not None:
            setattr(row, attr, value)


DESCRIBED_FIELDS = {"description": "description", "metadata": "meta"}


def cursor(prefix: str, before_id: str | None, before_id_alias: str | None) -> str | None:
    """The keyset cursor: `before_id`, else its alias `beforeId`; ApiError(400) if malformed."""
    value = before_id or before_id_alias
    if value and not ids.is_valid(value, prefix):
        raise ApiError(
            Code.INVALID_PARAMETER,
            f"before_id must be an id of this list ({prefix}_...).",
            param="before_id",
        )
    return value or None


async def page(
    unit: Unit,
    model: type[R],
    caller: Caller,
    *,
    key: str,
    limit: int,
    before_id: str | None = None,
    before_id_alias: str | None = None,
) -> dict[str, Any]:
    """One page of the caller's rows, newest first, in the list envelope.

    Keyset paging on the id (ids sort in creation order), looking one row ahead to decide
    `next_page_uri`. A well-formed cursor need not exist any more: paging goes on from its
    position when the row it names was deleted in between.
    """
    rows, more = await page_rows(unit, model, caller, limit, before_id, before_id_alias)
    return envelope(key, model.PATH, rows, limit, more=more)


async def page_rows(
    unit: Unit,
    model: type[R],
    caller: Caller,
    limit: int,
    before_id: str | None = None,
    before_id_alias: str | None = None,
    *,
    prefix: str | None = None,
) -> tuple[list[R], bool]:
    """The rows of one page (see `page`) and whether more follow, for handlers that bring
    rows up to date or add related rows before rendering them with `envelope`; `prefix` as
    for `keyset_rows`."""
    start = cursor(prefix or model.PREFIX, before_id, before_id_alias)
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
    condition, args = _keyset(unit.mark, account_id, start, count, prefix)
    return await unit.select(model, condition, args)


def _keyset(
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


async def select_in(unit: Unit, model: type[T], column: str, values: Sequence[Any]) -> list[T]:
    """The rows of `model` whose `column` is one of `values` (the related rows of a page,
    in one statement); none for no values."""
    if not values:
        return []
    if unit.dialect == "postgresql":  # one statement (prepared once) for any count
        return await unit.select(model, f'"{column}" = ANY({unit.mark})', [list(values)])
    marks = ", ".join([unit.mark] * len(values))
    return await unit.select(model, f'"{column}" IN ({marks})', values)


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
    uri, next_uri = _links(path, limit, items[-1]["id"] if more else None)
    return {key: items, "uri": uri, "next_page_uri": next_uri}


def _links(path: str, limit: int, last_id: str | None) -> tuple[str, str | None]:
    """A page's `uri` and `next_page_uri` (None when it is the last: no `last_id`)."""
    next_uri = None if last_id is None else urls.absolute(path, limit=limit, before_id=last_id)
    return urls.absolute(path), next_uri


# Whole operations on the caller's rows, one unit of work each.


async def read_one(model: type[R], id_: str) -> dict[str, Any]:
    """GET: the caller's row `id_` in its API shape (404 if it is not the caller's)."""
    async with db.read() as unit:
        return (await get_owned(unit, model, auth.caller(), id_)).to_api()


# Given a page's rows and the read unit, how to render each row: for lists whose items show
# related rows, loaded for the whole page at once (e.g. a subscription's sources).
Renderer = Callable[[Unit, list[Any]], Awaitable[Callable[[Any], dict[str, Any]]]]


async def read_page(
    model: type[R],
    key: str,
    limit: int,
    before_id: str | None,
    before_id_alias: str | None,
    filter_: str | None = None,
    *,
    renderer: Renderer | None = None,
    prefix: str | None = None,
    schema: str | None = None,
    path: str | None = None,
) -> Listed:
    """LIST: one page of the caller's rows in the list envelope named `key`, of those
    matching `filter_` when given (tunnelgw.listing). `renderer` renders rows with their
    related rows; `prefix` lists one kind of a shared table (edges), whose items follow the
    spec schema `schema` and live under the collection `path`. An unfiltered page of a model
    whose rendering is cached (tunnelgw.rendercache) is a `Page`, which the pipeline renders
    and validates."""
    if filter_ is not None:
        from tunnelgw import listing

        return await listing.read_filtered(
            model,
            key,
            limit,
            before_id,
            before_id_alias,
            filter_,
            renderer=renderer,
            prefix=prefix,
            schema=schema,
            path=path,
        )
    async with db.read() as unit:
        if renderer is None and unit.dialect == "sqlite" and rendercache.cacheable(model):
            return await _cached_page(
                unit, model, key, limit, before_id, before_id_alias, prefix, path
            )
        rows, more = await page_rows(
            unit, model, auth.caller(), limit, before_id, before_id_alias, prefix=prefix
        )
        render = await renderer(unit, rows) if renderer is not None and rows else None
    return envelope(key, path or model.PATH, rows, limit, more=more, render=render)


async def _cached_page(
    unit: Unit,
    model: type[R],
    key: str,
    limit: int,
    before_id: str | None,
    before_id_alias: str | None,
    prefix: str | None,
    path: str | None,
) -> rendercache.Page:
    """`read_page` of a model whose items render through tunnelgw.rendercache: the same rows
    (`page_rows`), unloaded, in a `Page` the pipeline renders; the rows read last time while
    the database is unchanged since (`rendercache.PageCache`)."""
    start = cursor(prefix or model.PREFIX, before_id, before_id_alias)
    account_id = auth.caller().account_id
    database = db.current()
    # Read before the query: a change after it makes the marker differ next time.
    marker = database.data_marker()
    page = (model, account_id, start, limit, prefix)
    rows = database.pages.get(page, marker)
    if rows is None:
        condition, args = _keyset(unit.mark, account_id, start, limit + 1, prefix)
        rows = await unit.select_rows(model, condition, args)
        database.pages.store(page, marker, rows)
    table = records.table_sql(model, unit.dialect)
    more = len(rows) > limit
    rows = rows[:limit]
    last_id = rows[-1][table.spec.attrs.index("id")] if more else None
    uri, next_uri = _links(path or model.PATH, limit, last_id)
    return rendercache.Page(
        model, key, rows, table.load, base=urls.base(), uri=uri, next_page_uri=next_uri
    )


async def update_one(model: type[R], id_: str, change: Callable[[R], None]) -> dict[str, Any]:
    """PATCH: apply `change` to the caller's row `id_` and commit; its new API shape."""
    async with db.write() as unit:
        row = await get_owned(unit, model, auth.caller(), id_)
        change(row)
    return row.to_api()


async def update_described(model: type[R], id_: str, body: Body) -> dict[str, Any]:
    """PATCH for resources whose only changeable fields are description and metadata."""
    return await update_one(model, id_, lambda row: apply_patch(row, body or {}, DESCRIBED_FIELDS))


async def delete_one(model: type[R], id_: str) -> tuple[None, int]:
    """DELETE: remove the caller's row `id_`; the empty 204 response."""
    async with db.write() as unit:
        await delete_owned(unit, model, auth.caller(), id_)
    return None, 204
