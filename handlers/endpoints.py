"""Endpoints (`/endpoints`): spec section 4.9. Read-only: the platform records endpoints
(fixtures here); the API lists and gets them."""

from __future__ import annotations

from typing import Any

from models import Endpoint
from tunnelgw import resources


async def get(id: str) -> dict[str, Any]:  # noqa: A002 - the spec's parameter name
    return await resources.read_one(Endpoint, id)


async def list(
    limit: int = resources.MAX_LIMIT,
    before_id: str | None = None,
    beforeId: str | None = None,  # noqa: N803
) -> dict[str, Any]:
    return await resources.read_page(Endpoint, "endpoints", limit, before_id, beforeId)
