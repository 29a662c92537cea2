"""Application sessions (`/app/sessions`): spec section 4.10. Read and delete only; deleting
a session signs its user out of that endpoint."""

from __future__ import annotations

from tunnelgw.models import ApplicationSession
from tunnelgw.services import crud

# The operations that are the shared CRUD ones (tunnelgw.services.crud.Resource).
resource = crud.Resource(ApplicationSession, "application_sessions")
get, list, delete = resource.get, resource.list, resource.delete
