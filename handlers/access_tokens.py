"""Access tokens (`/access_tokens`): bearer credentials that act as their owner within their
scopes (tunnelgw.core.scopes). The API creates tokens for the caller only; every principal of
the account reads them all, a non-admin changes, revokes and deletes only its own, an admin
any (tunnelgw.services.ownership), and only a token's owner changes its scopes. A token that
creates or changes a token gives it no scope it does not hold itself."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from tunnelgw.core import ids, scopes, timefmt
from tunnelgw.core.errors import ApiError, Code
from tunnelgw.models import AccessToken
from tunnelgw.services import auth, crud
from tunnelgw.services.auth import Caller
from tunnelgw.services.crud import Body


def _scopes(caller: Caller, wanted: Iterable[str]) -> Sequence[str]:
    """The scopes a token is given (each once, in the order sent): known ones (the spec's
    enum checks that too), and none its caller's own token lacks (403)."""
    chosen = [*dict.fromkeys(wanted)]  # (`list` is the list operation here)
    unknown = scopes.unknown(chosen)
    if unknown:
        raise ApiError(Code.INVALID_FIELD, f"{unknown[0][:64]!r} is not a scope.", field="scopes")
    for scope in chosen:
        if not caller.may(scope):
            raise ApiError(
                Code.SCOPE_REQUIRED,
                f"The access token {caller.access_token_id!r} does not have the {scope!r} "
                "scope, so it cannot give it to a token.",
                scope=scope,
                access_token_id=caller.access_token_id or "",
            )
    return chosen


def expiry(text: str | None) -> datetime | None:
    """`expires_at`: None for a token that does not expire; else a time after now (on the
    account's clock), whole seconds. The spec's `x-check: access-token-expiry`."""
    if not text:
        return None
    try:
        value = timefmt.parse_rfc3339(text)
    except ValueError:
        raise ApiError(
            Code.INVALID_FIELD, "expires_at is not an RFC 3339 date-time.", field="expires_at"
        ) from None
    if value <= timefmt.now():
        raise ApiError(
            Code.INVALID_FIELD,
            f"expires_at {timefmt.rfc3339(value)} is not in the future (now is "
            f"{timefmt.rfc3339(timefmt.utcnow())} on this account's clock).",
            field="expires_at",
        )
    return value.replace(microsecond=0)


async def create(caller: Caller, body: Body = None) -> tuple[dict[str, Any], int]:
    body = body or {}
    caller = caller
    chosen = _scopes(caller, body.get("scopes") or ())
    expires_at = expiry(body.get("expires_at"))
    token = auth.new_access_token()

    def build(owner_id: str) -> AccessToken:
        return AccessToken.new(
            id=ids.new_id(AccessToken.PREFIX),
            account_id=caller.account_id,
            owner_id=owner_id,
            description=body.get("description") or "",
            meta=body.get("metadata") or "",
            token_hash=auth.hash_token(token),
            scopes=[*chosen],
            expires_at=expires_at,
        )

    # The owner is the caller, share-locked as an owned row's owner is.
    row = await crud.add_owned(caller, None, build)
    return row.to_api(token=token), 201


async def update(caller: Caller, id: str, body: Body = None) -> dict[str, Any]:  # noqa: A002
    body = body or {}
    caller = caller
    wanted = body.get("scopes")
    chosen = _scopes(caller, wanted) if wanted is not None else None

    def change(row: AccessToken) -> None:
        if chosen is not None and [*chosen] != [*row.scopes]:
            if row.owner_id != caller.principal_id:
                raise ApiError(
                    Code.NOT_OWNER,
                    f"Only the owner of the access token {row.id!r} ({row.owner_id!r}) can "
                    "change its scopes; an admin can change its description and metadata, "
                    "revoke it or delete it.",
                    owner_id=row.owner_id,
                    field="scopes",
                )
            row.scopes = [*chosen]
        crud.apply_patch(row, body, crud.DESCRIBED_FIELDS)

    return await crud.update_one(caller, AccessToken, id, change)


async def revoke(caller: Caller, id: str, body: Body = None) -> dict[str, Any]:  # noqa: A002
    """The token stops authenticating at once and stays listed with `revoked_at` (revoking
    it again keeps the first time)."""

    def change(row: AccessToken) -> None:
        if row.revoked_at is None:
            row.revoked_at = timefmt.utcnow()

    return await crud.update_one(caller, AccessToken, id, change, lock=True)


resource = crud.Resource(AccessToken, "access_tokens")
get, list, delete = resource.get, resource.list, resource.delete
