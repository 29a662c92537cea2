"""The per-operation pipeline: security, request validation, the handler and response
validation of every spec operation, in one layer built once per operation at start-up.

`OperationMiddleware` sits in Connexion's middleware list after Connexion's RoutingMiddleware
(which routes each request to its operationId) and is itself a Connexion `RoutedMiddleware`:
Connexion parses the spec, resolves every operationId to its handler (RelativeResolver) and
hands each parsed operation to `Operation`. The layer does what Connexion's Security,
RequestValidation, ResponseValidation and Context middlewares and the AsyncApp's parameter
and response decorators do, against the same `openapi.yaml`, but everything that does not
depend on the request is made once: the security check, the parameter plan with compiled
validators, the body validators, the handler's argument names, and one compiled response
validator per status. Connexion's stock layers rebuild most of that on every request and
routed the request once per layer; together they cost more than the whole request does now
(bench/README.md).

Order of checks, each failing with the catalog error: body size (413, from Content-Length),
version header (400), the body received (413 past the limit while it streams, 408 past the
body deadline: before the request takes a database connection), credentials (401),
parameters (400), content type (415), body (400); then the handler, whose result must match
the operation's response schema for its status (else a logged 500).
"""
