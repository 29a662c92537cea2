"""The HTTP edge: the app factory, the per-operation pipeline (parameters, bodies,
responses, security), middleware, routing, error rendering, logging and metrics. Sets the
per-request state the lower layers read (settings, database, key, caller, base URL)."""
