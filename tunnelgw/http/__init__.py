"""The HTTP edge: the app factory, the per-operation pipeline (parameters, bodies,
responses, security), middleware, routing, error rendering, logging and metrics, and the
HTTP/1.1 protocol `tunnelgw serve` runs (edge: time and size limits). Sets the per-request
state the lower layers read (settings, database, key, caller, base URL)."""
