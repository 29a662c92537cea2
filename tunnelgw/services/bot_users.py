"""Bot users, served under two paths (`/bot_users`, and `/service_users`, the platform's newer
name for the same kind): the account's principals of kind `bot`; users (`usr_`) are never
listed there. Every principal of the account reads them; only an admin creates, changes or
deletes them (the platform's service users have developer rights only, and managing an
account's members is not one). Deleting one deletes its API keys and credentials with it (their
`owner_id` foreign keys cascade); an inactive one's API keys do not authenticate
(tunnelgw.services.auth)."""

from __future__ import annotations

import builtins
from collections.abc import Callable
from typing import Any

from tunnelgw.core import ids
from tunnelgw.core.errors import ApiError, Code
from tunnelgw.models import Principal
from tunnelgw.services import crud, paging, quotas
from tunnelgw.services.auth import Caller
from tunnelgw.services.crud import Body
from tunnelgw.storage import db
from tunnelgw.storage.unit import Lock, Unit

KIND = "bot"
FIELDS = {"name": "name", "active": "active"}


def _require_admin(caller: Caller, verb: str) -> None:
    if not caller.is_admin:
        raise ApiError(
            Code.PERMISSION_DENIED,
            f"Only an admin of the account may {verb} bot users (service users); every "
            "principal may read them.",
        )


class BotUsers:
    """The operations of the bot users under the collection `path`, in list envelopes named
    `key`, list items of the spec schema `schema` (each `uri` under `path`)."""

    def __init__(self, path: str, key: str, schema: str) -> None:
        self.path = path
        self.key = key
        self.schema = schema

    async def _bot(self, unit: Unit, caller: Caller, id_: str, *, lock: Lock = False) -> Principal:
        """The caller's bot user `id_`; ApiError(404) for another account's, a user's or none."""
        try:
            row: Principal | None = await crud.get_owned(unit, Principal, caller, id_, lock=lock)
        except ApiError:
            row = None
        if row is None or row.kind != KIND:
            raise ApiError(Code.NOT_FOUND, f"No bot user with id {id_!r}.", id=id_)
        return row

    async def create(self, caller: Caller, body: Body = None) -> tuple[dict[str, Any], int]:
        _require_admin(caller, "create")
        bot = Principal.new(
            id=ids.new_id(Principal.PREFIX), account_id=caller.account_id, kind=KIND
        )
        crud.apply_patch(bot, body or {}, FIELDS)
        async with db.write() as unit:
            await quotas.add(unit, bot)
        return bot.to_api(self.path), 201

    async def get(self, caller: Caller, id: str) -> dict[str, Any]:  # noqa: A002
        async with db.read() as unit:
            return (await self._bot(unit, caller, id)).to_api(self.path)

    async def list(
        self,
        caller: Caller,
        limit: int = paging.MAX_LIMIT,
        before_id: str | None = None,
        filter: str | None = None,  # noqa: A002 - the spec's parameter name
    ) -> crud.Listed:
        return await crud.read_page(
            caller,
            Principal,
            self.key,
            limit,
            before_id,
            filter,
            renderer=self._renderer,
            prefix=KIND,
            schema=self.schema,
            path=self.path,
        )

    async def _renderer(
        self, _unit: Unit, _rows: builtins.list[Principal]
    ) -> Callable[[Principal], dict[str, Any]]:
        path = self.path
        return lambda row: row.to_api(path)

    async def update(
        self,
        caller: Caller,
        id: str,  # noqa: A002
        body: Body = None,
    ) -> dict[str, Any]:
        async with db.write() as unit:
            bot = await self._bot(unit, caller, id)
            _require_admin(caller, "change")
            crud.apply_patch(bot, body or {}, FIELDS)
        return bot.to_api(self.path)

    async def delete(self, caller: Caller, id: str) -> tuple[None, int]:  # noqa: A002
        async with db.write() as unit:
            bot = await self._bot(unit, caller, id, lock=True)
            _require_admin(caller, "delete")
            # Its API keys, credentials and SSH credentials go with it (ON DELETE CASCADE).
            await unit.delete(bot)
        return None, 204
