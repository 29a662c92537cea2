"""Event destinations (`/event_destinations`): a format and exactly one target
(tunnelgw.rules.event_targets). The target's credential is sealed under the KEK and shown as
`""`; a PATCH that keeps the kind (and AWS auth method) and leaves the credential empty keeps
the stored one. A destination an event subscription uses cannot be deleted (409)."""

from __future__ import annotations

from typing import Any

from tunnelgw.core import ids
from tunnelgw.core.errors import Code
from tunnelgw.crypto import keys
from tunnelgw.models import EventDestination
from tunnelgw.models.event_subscription import subscriptions_using
from tunnelgw.rules import event_targets
from tunnelgw.rules.event_targets import Target
from tunnelgw.services import crud
from tunnelgw.services.auth import Caller
from tunnelgw.services.crud import Body


def _seal(destination: EventDestination, target: Target) -> None:
    """Store `target` on the row, its credential sealed (None when it has none)."""
    destination.target = target.api()
    destination.sealed_credential = (
        keys.wrap(keys.current(), target.credential.encode("utf-8"), destination.id.encode())
        if target.credential
        else None
    )


def _keeps_credential(destination: EventDestination, target: Target) -> bool:
    """Whether `target` leaves its credential empty where the stored target of the same kind
    (and, for AWS, the same auth method) holds one: the stored one then stays."""
    if target.credential != "" or destination.sealed_credential is None:
        return False
    return event_targets.checked_target(destination.target).credential is not None and (
        target.kind in destination.target
    )


async def create(caller: Caller, body: Body = None) -> tuple[dict[str, Any], int]:
    body = body or {}
    event_targets.check_create(body)
    destination = EventDestination.new(
        id=ids.new_id(EventDestination.PREFIX), account_id=caller.account_id
    )
    crud.apply_patch(destination, body, crud.DESCRIBED_FIELDS)
    destination.format = event_targets.checked_format(body.get("format")) or "json"
    _seal(destination, event_targets.checked_target(body["target"]))
    return (await crud.add(destination)).to_api(), 201


async def update(caller: Caller, id: str, body: Body = None) -> dict[str, Any]:  # noqa: A002
    body = body or {}
    format_ = event_targets.checked_format(body.get("format"))
    target = event_targets.check_update(body)

    def change(destination: EventDestination) -> None:
        crud.apply_patch(destination, body, crud.DESCRIBED_FIELDS)
        if format_ is not None:
            destination.format = format_
        if target is not None:
            if _keeps_credential(destination, target):
                destination.target = target.api()
            else:
                event_targets.require_credential(target)
                _seal(destination, target)

    return await crud.update_one(caller, EventDestination, id, change, lock=True)


# The operations that are the shared CRUD ones (tunnelgw.services.crud.Resource); a
# subscription that takes the destination up share-locks it.
resource = crud.Resource(
    EventDestination,
    "event_destinations",
    in_use=crud.InUse(
        users=lambda unit, destination: subscriptions_using(unit, destination.id),
        code=Code.EVENT_DESTINATION_IN_USE,
        message="The event destination {row.id!r} is used by the event subscription(s) "
        "{users}; take it out of them (PATCH /event_subscriptions/{{id}} with other "
        "destination_ids) or delete them first.",
        details={"id": "{row.id}", "subscriptions": "{listed}"},
    ),
)
get, list, delete = resource.get, resource.list, resource.delete
