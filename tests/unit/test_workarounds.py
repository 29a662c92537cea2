"""The workarounds of tunnelgw.http.workarounds, each still needed: the stand-ins for what
dependencies import but the server never runs (the library still imports the module without
it), and the skip of Connexion's spec check (Connexion still checks every spec it loads).
What a serving process loads: `cryptography`, the fixture loader and cel-rust at first use
(imported inside the functions that need them), not at start-up."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tunnelgw.http import workarounds

ROOT = Path(__file__).resolve().parents[2]


# The modules the server process imports at start-up (`tunnelgw serve`): the app, the command
# line, every handler, uvicorn's supervisors; without any stand-in.
SERVING_IMPORTS = """
import importlib, pathlib, sys
import tunnelgw.http.app, tunnelgw.cli
import uvicorn.main, uvicorn.supervisors
for path in pathlib.Path("handlers").glob("*.py"):
    importlib.import_module(f"tunnelgw.handlers.{path.stem}")
"""
STAND_INS = [
    *workarounds.UNUSED_BY_THE_SERVER,
    *workarounds.NAMES_UNUSED_BY_THE_SERVER,
    *workarounds.OPTIONAL_UNUSED_BY_THE_SERVER,
]


@pytest.fixture(scope="module")
def imported_without_stand_ins() -> set[str]:
    """The modules the serving process's start-up imports without any stand-in (one child
    interpreter for all the stand-ins' tests)."""
    code = SERVING_IMPORTS + "print('\\n'.join(sys.modules))"
    done = subprocess.run(
        [sys.executable, "-W", "ignore", "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return set(done.stdout.split())


@pytest.mark.parametrize("name", STAND_INS)
def test_each_stand_in_is_still_needed(name, imported_without_stand_ins):
    """Without the stand-ins, the serving process's start-up imports each module they stand
    in for: when a library stops importing one, this fails, and its stand-in should go."""
    assert name in imported_without_stand_ins, f"{name} is no longer imported: drop its stand-in"


def test_connexion_still_checks_every_spec_it_loads(monkeypatch):
    """Connexion checks each spec it loads against the OpenAPI schema, through
    `_validate_spec`, and an app builds several (the API's and a copy per base path), so the
    skip of `workarounds.shipped_spec` still saves time and still takes hold. When Connexion
    stops checking (or checks once), this fails and the skip can go; when it checks through
    another method, this fails and the skip must follow."""
    from connexion.exceptions import InvalidSpecification
    from connexion.spec import OpenAPISpecification

    invalid = {"openapi": "3.0.3", "info": 1, "paths": {}}
    with pytest.raises(InvalidSpecification):
        OpenAPISpecification(invalid)
    with workarounds.shipped_spec():
        loaded = OpenAPISpecification(invalid)
        loaded.with_base_path("/other")  # a copy per base path: not checked either
    with pytest.raises(InvalidSpecification):  # restored after the app's load
        OpenAPISpecification(invalid)
    checked: list[object] = []
    check = OpenAPISpecification._validate_spec
    counting = staticmethod(lambda spec: checked.append(check(spec)))
    monkeypatch.setattr(OpenAPISpecification, "_validate_spec", counting)
    valid = {"openapi": "3.0.3", "info": {"title": "t", "version": "1"}, "paths": {}}
    OpenAPISpecification(valid).with_base_path("/other")
    assert len(checked) == 2, "Connexion no longer checks each spec it builds: drop the skip"


def test_connexion_still_copies_the_document_it_loads():
    """Connexion copies a spec document twice as it loads it (the raw spec it keeps, and the
    one it resolves); `workarounds.shipped_spec` resolves the handed-over document in place
    instead. When Connexion stops copying, the first assertion fails and the skip can go;
    when it copies some other way, the second fails and the skip must follow."""
    from connexion.spec import OpenAPISpecification

    def document() -> dict:
        return {
            "openapi": "3.0.3",
            "info": {"title": "t", "version": "1"},
            "paths": {"/a": {"get": {"responses": {"200": {"$ref": "#/components/responses/R"}}}}},
            "components": {"responses": {"R": {"description": "r"}}},
        }

    handed = document()
    loaded = OpenAPISpecification(handed)
    assert loaded.raw is not handed
    assert "$ref" in handed["paths"]["/a"]["get"]["responses"]["200"]
    handed = document()
    with workarounds.shipped_spec():
        loaded = OpenAPISpecification(handed)
        assert loaded.raw is handed
        assert loaded.spec is handed
        assert handed["paths"]["/a"]["get"]["responses"]["200"] == {"description": "r"}
        docs = loaded.with_base_path("/other")  # the docs' copy: resolving again is a no-op
    assert docs.spec["paths"] == handed["paths"]
    assert OpenAPISpecification(document()).raw is not handed  # restored after the load


@pytest.mark.parametrize("entry", ["tunnelgw.__main__", "tunnelgw.worker"])
def test_serving_imports_neither_cryptography_nor_the_fixture_loader(entry):
    """What `tunnelgw serve` imports before its first request (the app, the CLI, every
    handler Connexion resolves) leaves `cryptography`, the fixture loader, cel-rust,
    `requests` (with urllib3), httpx and Starlette's test client unloaded (stand-ins until
    first use), and neither httpx's command line (rich, pygments) nor
    uvicorn's watchfiles reloader importable: in the main process (`tunnelgw.__main__` first)
    and in a spawned worker (`tunnelgw.worker` first). httpx itself still works."""
    code = textwrap.dedent(
        f"""
        import importlib, pathlib, sys
        import {entry}
        import tunnelgw.http.app, tunnelgw.cli
        for path in pathlib.Path("handlers").glob("*.py"):
            importlib.import_module(f"tunnelgw.handlers.{{path.stem}}")
        lazy = ("cryptography", "tunnelgw.seeding", "alembic", "cel", "urllib3")
        lazy += ("rich", "pygments", "watchfiles")
        loaded = [m for m in lazy if m in sys.modules]
        # Stand-ins until first use: requests, httpx, Jinja2 and the Starlette modules of both.
        for name in ("requests", "httpx", "jinja2", "starlette.testclient", "starlette.templating"):
            if type(sys.modules.get(name)).__name__ != "_Deferred":
                loaded.append(name)
        import httpx
        assert "httpx" in sys.modules and httpx.Request("GET", "http://x/").method == "GET"
        print(",".join(loaded))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == ""


def test_a_deferred_module_is_the_real_one_at_its_first_use():
    """`workarounds.defer`: `import requests` binds a stand-in that loads nothing until read; then
    attributes, `from` imports and submodules are the real module's, and `sys.modules` holds
    the real module."""
    code = textwrap.dedent(
        """
        import sys
        from tunnelgw.http import workarounds
        workarounds.defer("requests")
        workarounds.defer("requests")  # twice is once
        workarounds.defer("no_such_module_anywhere")  # not installed: nothing
        import requests
        stand_in = requests
        assert "urllib3" not in sys.modules and "no_such_module_anywhere" not in sys.modules
        assert stand_in.codes.ok == 200
        assert "urllib3" in sys.modules
        from requests.adapters import HTTPAdapter
        import requests.sessions
        real = sys.modules["requests"]
        assert type(real).__name__ == "module" and real is not stand_in
        assert stand_in.Session is real.Session is requests.sessions.Session
        assert issubclass(HTTPAdapter, real.adapters.BaseAdapter)
        print("ok")
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "ok", done.stderr


def test_names_imported_from_a_deferred_module_load_it_at_first_use():
    """`workarounds.defer_names`: `from module import Name` binds a stand-in name and loads nothing;
    calling it (or reading from it) imports the real module and uses the real object."""
    code = textwrap.dedent(
        """
        import sys
        from tunnelgw.http import workarounds
        workarounds.defer_names("starlette.testclient", ("TestClient",))
        from starlette.testclient import TestClient
        assert "httpx" not in sys.modules, "imported with the stand-in"
        assert "deferred starlette.testclient.TestClient" in repr(TestClient)
        from starlette.applications import Starlette
        from starlette.responses import PlainTextResponse
        from starlette.routing import Route
        app = Starlette(routes=[Route("/", lambda request: PlainTextResponse("hi"))])
        client = TestClient(app)
        real = sys.modules["starlette.testclient"]
        assert type(real).__name__ == "module" and isinstance(client, real.TestClient)
        assert client.get("/").text == "hi"
        assert TestClient.__name__ == "TestClient"  # attributes: the real class's
        print("ok")
        """
    )
    done = _python(code)
    assert done.stdout.strip() == "ok", done.stderr


def test_connexions_test_client_and_docs_work_in_a_serving_process(tmp_path):
    """Connexion's `app.test_client()` (Starlette's, through the stand-in) still works; the
    docs routes, built at their first request, load Jinja2 then and serve."""
    code = textwrap.dedent(
        """
        import sys
        import tunnelgw.worker
        app = tunnelgw.worker.create_app()
        assert type(sys.modules["httpx"]).__name__ == "_Deferred"
        client = app.test_client()
        assert client.get("/healthz").status_code == 200
        assert type(sys.modules["jinja2"]).__name__ == "_Deferred"
        page = client.get("/ui/")
        assert page.status_code == 200 and "swagger-ui" in page.text, page.text[:200]
        assert client.get("/openapi.json").json()["openapi"].startswith("3.")
        assert type(sys.modules["jinja2"]).__name__ == "module"
        print("ok")
        """
    )
    done = _python(code, TUNNELGW_DATA_DIR=str(tmp_path))
    assert done.stdout.strip() == "ok", done.stderr


def _python(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    """`code` run by a fresh interpreter in the repository (warnings off), with `env` added."""
    return subprocess.run(
        [sys.executable, "-W", "ignore", "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, **env},
    )
