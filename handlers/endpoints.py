"""Endpoints (`/endpoints`): spec section 4.9. Read-only: the platform records endpoints
(fixtures here); the API lists and gets them."""

from __future__ import annotations

import builtins

from models import Endpoint
from tunnelgw.services import crud, listing, paging


async def list(
    limit: int = paging.MAX_LIMIT,
    before_id: str | None = None,
    filter: str | None = None,  # noqa: A002 - the spec's parameter names
    id: builtins.list[str] | None = None,  # noqa: A002
    url: builtins.list[str] | None = None,
    ids: builtins.list[str] | None = None,
    urls: builtins.list[str] | None = None,
) -> crud.Listed:
    """`id`/`ids` and `url`/`urls` are exact-match filters (any of the ids, any of the
    URLs); with `filter`, an endpoint must pass all of them."""
    exact: dict[str, set[str]] = {}
    keep: builtins.list[tuple[str, str]] = []
    for field, values, names in (
        ("id", [*(id or ()), *(ids or ())], ("id", "ids")),
        ("url", [*(url or ()), *(urls or ())], ("url", "urls")),
    ):
        if values:
            exact[field] = set(values)
            keep += [(names[0], value) for value in values]
    if filter is None and not exact:
        return await crud.read_page(Endpoint, "endpoints", limit, before_id)
    return await listing.read_filtered(
        Endpoint, "endpoints", limit, before_id, filter, exact=exact, keep=keep
    )


# The operations that are the shared CRUD ones (tunnelgw.services.crud.Resource).
resource = crud.Resource(Endpoint, "endpoints")
get = resource.get
