"""The shared CRUD steps every resource uses: get-or-404, apply a PATCH, list a page, and
whole get/list/update/delete operations built from them. Handlers call these instead of
writing queries; a plain resource declares its operations with one `Resource`.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from sqlalchemy import bindparam, delete, select

from tunnelgw.core import ids, urls
from tunnelgw.core.errors import ApiError, Code
from tunnelgw.models.base import AccountScoped, Owned
from tunnelgw.services import listing, ownership, paging, quotas, rendercache
from tunnelgw.services.auth import NOT_CARRIED, Caller
from tunnelgw.storage import db, records
from tunnelgw.storage.statements import Query
from tunnelgw.storage.unit import Lock, Unit

R = TypeVar("R", bound=AccountScoped)
T = TypeVar("T")

# A JSON request body as Connexion passes it (None when the request had none).
Body = dict[str, Any] | None

# What a list handler returns: the envelope, or a page the pipeline renders (rendercache).
Listed = dict[str, Any] | rendercache.Page


async def _of_caller(unit: Unit, model: type[R], caller: Caller, id_: str, lock: Lock) -> R | None:
    carried: Any = NOT_CARRIED
    if caller.carried is not None and not (unit.writes or lock):
        carried = caller.carried.take(model, id_)
    row: R | None = await unit.get(model, id_, lock=lock) if carried is NOT_CARRIED else carried
    return row if row is not None and row.account_id == caller.account_id else None


async def get_owned(
    unit: Unit, model: type[R], caller: Caller, id_: str, *, lock: Lock = False
) -> R:
    """The row `id_` of the caller's account; ApiError(404) if absent or another account's."""
    row = await _of_caller(unit, model, caller, id_, lock)
    if row is None:
        raise ApiError(Code.NOT_FOUND, f"No {model.__name__} with id {id_!r}.", id=id_)
    return row


async def get_managed(
    unit: Unit, model: type[R], caller: Caller, id_: str, *, lock: Lock = False
) -> R:
    """The row `id_` of the caller's account that the caller is about to change or delete:
    `get_owned`, and for an owned model (tunnelgw.models.base.Owned) the ownership rule
    (tunnelgw.services.ownership: ApiError(403 ERR_NOT_OWNER))."""
    row = await get_owned(unit, model, caller, id_, lock=lock)
    if issubclass(model, Owned):
        ownership.check_may_change(caller, row)
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
            context={"id": id_},
            field=field,
        )
    return row


async def relink(
    unit: Unit,
    caller: Caller,
    model: type[R],
    ids_: Sequence[str],
    field: str,
    column: Any,
    owner_id: str,
    links: Sequence[Any],
) -> None:
    """Make `links` (new rows of a link table) the links of the row `owner_id`, in place of
    the rows whose `column` names it. `ids_` are the rows of `model` the links refer to: each
    must be the caller's (404 ERR_REFERENCE_NOT_FOUND naming `field`), share-locked so it
    cannot be deleted meanwhile (its delete guard waits, then sees the link)."""
    for id_ in ids_:
        await get_reference(unit, model, caller, id_, field, lock="share")
    await unit.exec(_unlink_query(column), {"owner": owner_id})
    unit.add_all(list(links))


@functools.cache
def _unlink_query(column: Any) -> Query:
    return Query(delete(column.class_).where(column == bindparam("owner")))


async def taken(unit: Unit, column: Any, value: str) -> bool:
    """Whether a row of any account has `value` in the unique `column` (e.g. a domain)."""
    return (await unit.exec(_taken_query(column), {"value": value})).first() is not None


async def holder(unit: Unit, column: Any, value: str) -> str | None:
    """The account whose row has `value` in the unique `column`, or None when no row has."""
    found: str | None = (await unit.exec(_holder_query(column), {"value": value})).first()
    return found


@functools.cache
def _holder_query(column: Any) -> Query:
    account = column.class_.account_id
    return Query(select(account).where(column == bindparam("value")).limit(1))


@functools.cache
def _taken_query(column: Any) -> Query:
    return Query(select(column).where(column == bindparam("value")).limit(1))


async def delete_owned(unit: Unit, model: type[R], caller: Caller, id_: str) -> None:
    """Delete the row `id_` of the caller's account; ApiError(404) if there is none, 403 if
    the caller may not (`get_managed`)."""
    await unit.delete(await get_managed(unit, model, caller, id_))


def apply_patch(row: Any, body: Mapping[str, Any], fields: Mapping[str, str]) -> None:
    """Set each API field present (and not null) in `body` on `row`.

    `fields` maps API names to attribute names (`{"metadata": "meta"}`).
    """
    for api_name, attr in fields.items():
        value = body.get(api_name)
        if value is not None:
            setattr(row, attr, value)


DESCRIBED_FIELDS = {"description": "description", "metadata": "meta"}


# Whole operations on the caller's rows, one unit of work each.


async def read_owned(caller: Caller, model: type[R], id_: str) -> R:
    """The caller's row `id_`, read in a unit of its own (404 if it is not the caller's)."""
    async with db.read() as unit:
        return await get_owned(unit, model, caller, id_)


async def read_one(caller: Caller, model: type[R], id_: str) -> dict[str, Any]:
    """GET: the caller's row `id_` in its API shape (404 if it is not the caller's)."""
    async with db.read() as unit:
        return (await get_owned(unit, model, caller, id_)).to_api()


async def read_page(
    caller: Caller,
    model: type[R],
    key: str,
    limit: int,
    before_id: str | None,
    filter_: str | None = None,
    *,
    renderer: paging.Renderer | None = None,
    prefix: str | None = None,
    schema: str | None = None,
    path: str | None = None,
) -> Listed:
    """LIST: one page of the caller's rows in the list envelope named `key`, of those
    matching `filter_` when given (tunnelgw.services.listing). `renderer` renders rows with
    their related rows; `prefix` lists one kind of a shared table (edges), whose items follow the
    spec schema `schema` and live under the collection `path`. An unfiltered page of a model
    whose rendering is cached (tunnelgw.services.rendercache) is a `Page`, which the pipeline
    renders and validates."""
    if filter_ is not None:
        return await listing.read_filtered(
            caller,
            model,
            key,
            limit,
            before_id,
            filter_,
            renderer=renderer,
            prefix=prefix,
            schema=schema,
            path=path,
        )
    async with db.read() as unit:
        if renderer is None and unit.dialect == "sqlite" and rendercache.cacheable(model):
            return await _cached_page(unit, caller, model, key, limit, before_id, prefix, path)
        rows, more = await paging.page_rows(unit, model, caller, limit, before_id, prefix=prefix)
        render = await renderer(unit, rows) if renderer is not None and rows else None
    return paging.envelope(key, path or model.PATH, rows, limit, more=more, render=render)


async def _cached_page(
    unit: Unit,
    caller: Caller,
    model: type[R],
    key: str,
    limit: int,
    before_id: str | None,
    prefix: str | None,
    path: str | None,
) -> rendercache.Page:
    """`read_page` of a model whose items render through tunnelgw.services.rendercache: the
    same rows (`paging.page_rows`), unloaded, in a `Page` the pipeline renders."""
    start = paging.cursor(prefix or model.PREFIX, before_id)
    condition, args = paging.keyset(unit.mark, caller.account_id, start, limit + 1, prefix)
    rows = await unit.select_rows(model, condition, args)
    table = records.table_sql(model, unit.dialect)
    more = len(rows) > limit
    rows = rows[:limit]
    id_at = table.spec.attrs.index("id")
    last_id = rows[-1][id_at] if more else None
    uri, next_uri = paging.links(path or model.PATH, limit, last_id)
    return rendercache.Page(
        model,
        key,
        rows,
        table.load,
        id_at=id_at,
        base=urls.base(),
        uri=uri,
        next_page_uri=next_uri,
    )


async def add(row: R) -> R:
    """CREATE: `row`, a new row of the caller's account, admitted by its quota and inserted
    (tunnelgw.services.quotas.add) in a unit of its own."""
    async with db.write() as unit:
        await quotas.add(unit, row)
    return row


async def add_owned(caller: Caller, owner_id: str | None, build: Callable[[str], R]) -> R:
    """CREATE of an owned row: `build(owner)` (the id of the principal the row belongs to,
    checked by tunnelgw.services.ownership.owner) admitted by its quota and inserted."""
    async with db.write() as unit:
        owner = await ownership.owner(unit, caller, owner_id)
        row = build(owner.id)
        await quotas.add(unit, row)
    return row


async def update_one(
    caller: Caller, model: type[R], id_: str, change: Callable[[R], None], *, lock: Lock = False
) -> dict[str, Any]:
    """PATCH: apply `change` to the caller's row `id_` (locked as `lock` says) and commit; its
    new API shape (404, or 403 when the caller may not change it: `get_managed`)."""
    async with db.write() as unit:
        row = await get_managed(unit, model, caller, id_, lock=lock)
        change(row)
    return row.to_api()


async def update_described(caller: Caller, model: type[R], id_: str, body: Body) -> dict[str, Any]:
    """PATCH for resources whose only changeable fields are description and metadata."""
    return await update_one(
        caller, model, id_, lambda row: apply_patch(row, body or {}, DESCRIBED_FIELDS)
    )


async def delete_one(caller: Caller, model: type[R], id_: str) -> tuple[None, int]:
    """DELETE: remove the caller's row `id_`; the empty 204 response."""
    async with db.write() as unit:
        await delete_owned(unit, model, caller, id_)
    return None, 204


@dataclass(frozen=True)
class InUse:
    """A delete guard, declared: the row is not deleted while other rows refer to it.

    `users(unit, row)` (a query of the model layer) gives the ids of the rows that refer to
    `row`, [] when none; while any do, DELETE answers ApiError(`code`) with `message`,
    `details` and `context` (the platform profile's values), each a `str.format` template of
    `row` (the row), `users` (the ids named, ", "-joined), `listed` (the same, ","-joined)
    and `more` (" and more" when `shown` cut the ids short, else ""). `shown` names at most
    that many ids (None: all)."""

    users: Callable[[Unit, Any], Awaitable[Sequence[str]]]
    code: Code
    message: str
    details: Mapping[str, str] = field(default_factory=dict)
    context: Mapping[str, str] = field(default_factory=dict)
    shown: int | None = None

    def refusal(self, row: Any, users: Sequence[str]) -> ApiError:
        named = users[: self.shown] if self.shown is not None else users
        fields = {
            "row": row,
            "users": ", ".join(named),
            "listed": ",".join(named),
            "more": " and more" if len(users) > len(named) else "",
        }
        error = ApiError(
            self.code,
            self.message.format(**fields),
            context={name: value.format(**fields) for name, value in self.context.items()},
        )
        error.details.update({name: value.format(**fields) for name, value in self.details.items()})
        return error


async def delete_unless_used(
    caller: Caller, model: type[R], id_: str, guard: InUse
) -> tuple[None, int]:
    """DELETE of a row other rows refer to: the caller's row `id_`, locked before its users
    are read (`guard.users`), so a writer that takes it up (and share-locks it) waits or is
    waited for; the guard's refusal when any uses it, else the row removed (204)."""
    async with db.write() as unit:
        row = await get_managed(unit, model, caller, id_, lock=True)
        using = await guard.users(unit, row)
        if using:
            raise guard.refusal(row, using)
        await unit.delete(row)
    return None, 204


class Resource(Generic[R]):
    """The operations a plain account-scoped collection shares, declared once by its handler
    module (`resource = Resource(Model, "key")`, then `get, list = resource.get,
    resource.list`, ...):

    - `create`: a new row of the caller's account with the body's `fields` set;
    - `get`: the caller's row by id (404 for an unknown id or another account's);
    - `list`: a page in the envelope `key`, newest first, `filter` (CEL) when given, each row
      rendered by `renderer` when given (rows with related rows), else its `to_api()`;
    - `update`: the body's `fields` that are present and not null set on the row;
    - `delete`: the row removed (204), unless the declared guard `in_use` refuses it.

    `fields` maps API names to row attributes (default: description and metadata). A handler
    writes only the operations whose behaviour is specific to its resource.
    """

    def __init__(
        self,
        model: type[R],
        key: str,
        *,
        fields: Mapping[str, str] = DESCRIBED_FIELDS,
        renderer: paging.Renderer | None = None,
        in_use: InUse | None = None,
    ) -> None:
        self.model = model
        self.key = key
        self.fields = fields
        self.renderer = renderer
        self.in_use = in_use

    async def create(self, caller: Caller, body: Body = None) -> tuple[dict[str, Any], int]:
        model = self.model
        row = model.new(id=ids.new_id(model.PREFIX), account_id=caller.account_id)
        apply_patch(row, body or {}, self.fields)
        return (await add(row)).to_api(), 201

    async def get(self, caller: Caller, id: str) -> dict[str, Any]:  # noqa: A002
        return await read_one(caller, self.model, id)

    async def list(
        self,
        caller: Caller,
        limit: int = paging.MAX_LIMIT,
        before_id: str | None = None,
        filter: str | None = None,  # noqa: A002 - the spec's parameter name
    ) -> Listed:
        return await read_page(
            caller, self.model, self.key, limit, before_id, filter, renderer=self.renderer
        )

    async def update(
        self,
        caller: Caller,
        id: str,  # noqa: A002
        body: Body = None,
    ) -> dict[str, Any]:
        fields = self.fields
        return await update_one(
            caller, self.model, id, lambda row: apply_patch(row, body or {}, fields)
        )

    async def delete(self, caller: Caller, id: str) -> tuple[None, int]:  # noqa: A002
        if self.in_use is not None:
            return await delete_unless_used(caller, self.model, id, self.in_use)
        return await delete_one(caller, self.model, id)
