"""Endpoint configurations (`/endpoint_configurations/{id}`): retired by the platform but
referenced by reserved domains; read-only (rows come from fixtures), get only."""

from __future__ import annotations

from tunnelgw.models import EndpointConfiguration
from tunnelgw.services import crud

# The operations that are the shared CRUD ones (tunnelgw.services.crud.Resource).
resource = crud.Resource(EndpointConfiguration, "endpoint_configurations")
get = resource.get
