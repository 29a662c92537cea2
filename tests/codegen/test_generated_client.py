"""Issue 19: a client generated from the served `/openapi.json` works. openapi-python-client
(PyPI; the `codegen` extra) generates a package from a live server's document, with no warning;
its models carry the spec's schema names; it creates, gets, lists and deletes API keys and
HTTP response backends on that server.

Marked `codegen` (tox -e codegen): the generator is not installed in the other environments.
"""

from __future__ import annotations

import importlib
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import pytest

from tunnelgw.testing import TunnelgwServer

pytestmark = pytest.mark.codegen

PACKAGE = "tunnelgw_generated_client"
GENERATE_TIMEOUT = 180


@pytest.fixture(scope="module")
def server() -> Iterator[TunnelgwServer]:
    with TunnelgwServer() as running:
        yield running


@pytest.fixture(scope="module")
def generated(
    server: TunnelgwServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[ModuleType, str]]:
    """The client package generated from the server's `/openapi.json`, imported, and what the
    generator printed."""
    folder = tmp_path_factory.mktemp("codegen")
    bin_dir = Path(sys.executable).parent
    exe = shutil.which("openapi-python-client", path=str(bin_dir))
    assert exe, "openapi-python-client is not installed (pip install -e '.[codegen]')"
    done = subprocess.run(
        [
            exe,
            "generate",
            *("--url", f"{server.base_url}/openapi.json"),
            *("--meta", "none"),
            *("--output-path", str(folder / PACKAGE)),
        ],
        capture_output=True,
        text=True,
        timeout=GENERATE_TIMEOUT,
        cwd=folder,
        # Its post-generation hooks run ruff from PATH (installed with it).
        env={**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"},
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    sys.path.insert(0, str(folder))
    try:
        yield importlib.import_module(PACKAGE), output
    finally:
        sys.path.remove(str(folder))
        for name in [m for m in sys.modules if m == PACKAGE or m.startswith(f"{PACKAGE}.")]:
            del sys.modules[name]


def _module(package: ModuleType, name: str) -> Any:
    return importlib.import_module(f"{package.__name__}.{name}")


def test_the_generator_has_no_warning(generated):
    _, output = generated
    assert "Warning" not in output, output
    assert "Unable to" not in output, output


def test_the_models_carry_the_specs_schema_names(generated, server):
    package, _ = generated
    models = _module(package, "models")
    with httpx.Client(base_url=server.base_url, timeout=30) as client:
        schemas = client.get("/openapi.json").json()["components"]["schemas"]
    objects = [name for name, schema in schemas.items() if "properties" in schema]
    assert len(objects) > 80
    assert [name for name in objects if not hasattr(models, name)] == []
    # An enum of null alone (UnmodelledModule: always null) is None there, not a type.
    enums = [
        name
        for name, schema in schemas.items()
        if any(v is not None for v in schema.get("enum", ()))
    ]
    assert [name for name in enums if not hasattr(models, name)] == []
    # Each request schema is its own model, not a copy per operation.
    assert not [
        name for name in dir(models) if name.endswith("ServiceVersion") and name != "ServiceVersion"
    ]


def test_create_get_list_delete_api_keys(generated, server):
    package, _ = generated
    api = importlib.import_module(f"{PACKAGE}.api.api_keys")
    models = _module(package, "models")
    version = models.ServiceVersion("2")
    ops = {verb: importlib.import_module(f"{api.__name__}.api_keys_{verb}") for verb in _VERBS}
    with package.AuthenticatedClient(
        base_url=server.base_url, token=server.token, raise_on_unexpected_status=True
    ) as client:
        created = ops["create"].sync(
            client=client,
            body=models.ApiKeyCreate(description="generated client", metadata='{"k": 1}'),
            service_version=version,
        )
        assert isinstance(created, models.ApiKey), created
        assert created.token
        assert created.description == "generated client"
        got = ops["get"].sync(created.id, client=client, service_version=version)
        assert isinstance(got, models.ApiKey)
        assert (got.id, got.metadata, got.token, got.uri) == (
            created.id,
            '{"k": 1}',
            None,
            f"{server.base_url}/api_keys/{created.id}",
        )
        page = ops["list"].sync(client=client, limit=100, service_version=version)
        assert isinstance(page, models.ApiKeyList)
        assert created.id in [key.id for key in page.keys]
        deleted = ops["delete"].sync_detailed(created.id, client=client, service_version=version)
        assert deleted.status_code == 204
        gone = ops["get"].sync(created.id, client=client, service_version=version)
        assert isinstance(gone, models.Error)
        assert (gone.status_code, str(gone.error_code)) == (404, "ERR_NOT_FOUND")


_VERBS = ("create", "get", "list", "delete")


def test_create_get_list_delete_http_response_backends(generated, server):
    package, _ = generated
    models = _module(package, "models")
    version = models.ServiceVersion("2")
    ops = {
        verb: importlib.import_module(
            f"{PACKAGE}.api.http_response_backends.http_response_backends_{verb}"
        )
        for verb in _VERBS
    }
    with package.AuthenticatedClient(
        base_url=server.base_url, token=server.token, raise_on_unexpected_status=True
    ) as client:
        body = models.HttpResponseBackendWrite.from_dict(
            {
                "description": "maintenance",
                "body": "back soon",
                "status_code": 503,
                "headers": {"Retry-After": "120"},
            }
        )
        created = ops["create"].sync(client=client, body=body, service_version=version)
        assert isinstance(created, models.HttpResponseBackend), created
        assert (created.status_code, created.body) == (503, "back soon")
        assert created.headers.to_dict() == {"retry-after": "120"}
        got = ops["get"].sync(created.id, client=client, service_version=version)
        assert isinstance(got, models.HttpResponseBackend)
        assert got.id == created.id
        page = ops["list"].sync(client=client, service_version=version)
        assert isinstance(page, models.HttpResponseBackendList)
        assert [backend.id for backend in page.backends] == [created.id]
        assert page.next_page_uri is None
        deleted = ops["delete"].sync_detailed(created.id, client=client, service_version=version)
        assert deleted.status_code == 204
        assert ops["list"].sync(client=client, service_version=version).backends == []
