"""Endpoint configurations (`/endpoint_configurations/{id}`): retired by the platform but
referenced by reserved domains; read-only (rows come from fixtures), get only."""

from __future__ import annotations

from typing import Any

from models import EndpointConfiguration
from tunnelgw.services import crud


async def get(id: str) -> dict[str, Any]:  # noqa: A002 - the spec's parameter name
    return await crud.read_one(EndpointConfiguration, id)
