"""Bot users (`/bot_users`): the account's bot principals, which own API keys and credentials. The
platform deprecates this path in favour of `/service_users` (tunnelgw.handlers.service_users), which
serves the same rows; the rules are tunnelgw.services.bot_users's."""

from __future__ import annotations

from tunnelgw.services.bot_users import BotUsers

resource = BotUsers("/bot_users", "bot_users", "BotUser")
create, get, list = resource.create, resource.get, resource.list
update, delete = resource.update, resource.delete
