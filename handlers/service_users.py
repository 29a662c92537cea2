"""Service users (`/service_users`): the platform's newer name for bot users; the same rows as
`/bot_users` (tunnelgw.handlers.bot_users), each `uri` under this path. The rules are
tunnelgw.services.bot_users's."""

from __future__ import annotations

from tunnelgw.services.bot_users import BotUsers

resource = BotUsers("/service_users", "service_users", "ServiceUser")
create, get, list = resource.create, resource.get, resource.list
update, delete = resource.update, resource.delete
