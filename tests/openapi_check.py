"""Independent response validation: every response a test sees is checked against
`openapi.yaml` by openapi-core (not by Connexion, which serves it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import yaml
from openapi_core import OpenAPI
from openapi_core.datatypes import RequestParameters
from openapi_core.templating.paths.exceptions import OperationNotFound, PathNotFound
from openapi_schema_validator import OAS30Validator
from werkzeug.datastructures import Headers, ImmutableMultiDict

SPEC_PATH = Path(__file__).resolve().parents[1] / "openapi.yaml"


class HttpxRequest:
    """openapi-core's Request protocol over an httpx request."""

    def __init__(self, request: httpx.Request) -> None:
        url = urlsplit(str(request.url))
        self.host_url = f"{url.scheme}://{url.netloc}"
        self.path = url.path
        self.method = request.method.lower()
        self.parameters = RequestParameters(
            query=ImmutableMultiDict(list(request.url.params.multi_items())),
            header=Headers(list(request.headers.items())),
        )
        self.content_type = request.headers.get("content-type", "application/json").lower()
        try:
            self.body = request.content or None
        except httpx.RequestNotRead:  # a streamed body is not kept; responses do not need it
            self.body = None


class HttpxResponse:
    """openapi-core's Response protocol over an httpx response."""

    def __init__(self, response: httpx.Response) -> None:
        self.status_code = response.status_code
        self.headers = Headers(list(response.headers.items()))
        self.content_type = response.headers.get("content-type", "").lower()
        self.data = response.content or None


class SpecValidator:
    def __init__(self, spec: dict[str, Any] | None = None) -> None:
        """`openapi.yaml`, or a spec a server published (`/openapi.json`)."""
        if spec is None:
            # Parsed once here with libyaml (pure-Python PyYAML takes ~1.4 s for this file).
            raw = yaml.load(SPEC_PATH.read_text(encoding="utf-8"), Loader=yaml.CSafeLoader)
            self.openapi = OpenAPI.from_dict(raw)
        else:
            # A served spec names the address it was fetched at (`servers`): a live server
            # configured with a public URL is reached at another one. The checks here are of
            # shapes, whatever the address (tests/api/test_published_spec.py checks `servers`).
            raw = {**spec, "servers": [{"url": "/"}]}
            self.openapi = OpenAPI.from_dict(raw)
        self._error = OAS30Validator(raw["components"]["schemas"]["Error"])

    def check(self, response: httpx.Response) -> None:
        """Raise if `response` does not conform to the spec.

        A response to a path or method the spec does not have (404, 405, or 501 for an
        operation of the platform's API this server does not serve) is checked against the
        Error schema, which every error body follows.
        """
        try:
            self.openapi.validate_response(HttpxRequest(response.request), HttpxResponse(response))
        except (PathNotFound, OperationNotFound):
            assert response.status_code in (404, 405, 501), response.status_code
            assert response.headers["content-type"] == "application/json"
            self._error.validate(response.json())
