"""Principals: the users (`usr_`) and bots (`bot_`) of an account, which own API keys and
credentials (tunnelgw.models.base.Owned). Bots are the API's bot users and service users, one kind
under two paths (`/bot_users`, `/service_users`); users are made by the CLI and the bootstrap
only. An inactive principal's API keys do not authenticate (tunnelgw.services.auth)."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from sqlalchemy import Index, true
from sqlmodel import Field

from tunnelgw.core import urls
from tunnelgw.models.base import AccountScoped

Kind = Literal["user", "bot"]
PREFIXES: dict[str, str] = {"user": "usr", "bot": "bot"}
BOT_PATHS = ("/bot_users", "/service_users")
# Where a Ref to a bot user points: the path the platform now names them by.
BOT_REF_PATH = BOT_PATHS[1]


def principal_ref(principal_id: str | None) -> dict[str, str] | None:
    """The one Ref of a principal, wherever a response names one (`principal`, `created_by`,
    `last_updated_by`): a bot user's `uri` is its address under `/service_users` (it answers
    with the same credential); a user has no address in this API, nor in the platform's, so
    its `uri` is `""`, as the platform returns it. None for no principal."""
    if principal_id is None:
        return None
    if principal_id.startswith(PREFIXES["bot"] + "_"):
        return {"id": principal_id, "uri": f"{urls.base()}{BOT_REF_PATH}/{principal_id}"}
    return {"id": principal_id, "uri": ""}


class Principal(AccountScoped, table=True):
    __table_args__ = (Index("ix_principal_account_id_id", "account_id", "id"),)
    # The kind the API creates and lists (bot users); users' ids are `usr_` (PREFIXES).
    PREFIX: ClassVar[str] = PREFIXES["bot"]
    PATH: ClassVar[str] = BOT_PATHS[0]

    kind: str
    name: str = ""
    is_admin: bool = False
    active: bool = Field(default=True, sa_column_kwargs={"server_default": true()})

    def to_api(self, path: str = BOT_PATHS[0]) -> dict[str, Any]:
        """The bot user (service user) shape, its `uri` under the collection `path`."""
        return {
            "id": self.id,
            "uri": f"{urls.base()}{path}/{self.id}",
            "name": self.name,
            "active": self.active,
            "created_at": self.api_time("created_at"),
        }
