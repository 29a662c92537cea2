"""Operation handlers: one module per spec tag, one function per operationId verb."""
