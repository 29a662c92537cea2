"""The wheel installs cleanly beside a user's code (issue 30): built from this tree, installed
into a fresh venv (its own site-packages, nothing shared with this one) together with another
distribution that installs top-level `models` and `handlers` packages, and run from a project
folder on PYTHONPATH with its own `models.py` and `handlers/`: `tunnelgw serve` answers an
authenticated request, the testing kit (`TunnelgwServer`) serves, the pytest plugin's
`tunnelgw` fixture serves, and the user's modules stay the user's.

The wheel is built and installed with uv (the test extra brings it), whose cache tox's
environments fill (tox-uv): the dependencies are pinned to the versions this environment runs,
so nothing new is resolved or downloaded once cached."""

from __future__ import annotations

import base64
import hashlib
import importlib.metadata
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]
# What the wheel is built from (a copy: a stale ROOT/build/lib would leak into the wheel).
WHEEL_SOURCES = ("pyproject.toml", "README.md", "openapi.yaml", "tunnelgw", "handlers", "models")
TIMEOUT = 300
TOKEN = "tgw_user_" + secrets.token_urlsafe(32)

USER_MODELS = '''"""The user's own models module: tunnelgw must not be what imports it."""
OWNER = "user project"
'''
USER_HANDLERS = '''"""The user's own handlers package."""
OWNER = "user project"
'''
INSTALLED = '"""Another distribution\'s top-level package."""\nOWNER = "another distribution"\n'
KIT = """
import models, handlers
from tunnelgw.testing import TunnelgwServer

with TunnelgwServer() as server, server.client() as client:
    created = client.post("/reserved_domains", json={"name": "kit-user"})
    assert created.status_code == 201, created.text
    listed = client.get("/reserved_domains").json()["reserved_domains"]
    assert [d["id"] for d in listed] == [created.json()["id"]]
assert models.OWNER == handlers.OWNER == "user project"
print("kit ok")
"""
PLUGIN_TEST = """
import models
import handlers


def test_the_fixture_serves_beside_the_users_modules(tunnelgw):
    with tunnelgw.client() as client:
        created = client.post("/reserved_domains", json={"name": "plugin-user"})
        assert created.status_code == 201, created.text
    assert models.OWNER == handlers.OWNER == "user project"
"""


def _run(args: list[str | Path], **kwargs) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [str(a) for a in args],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
        **kwargs,
    )
    assert done.returncode == 0, f"{args}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


def _pins() -> str:
    """name==version of every distribution this environment runs, but tunnelgw."""
    pins = {}
    for dist in importlib.metadata.distributions():
        name = dist.metadata["Name"]
        if name and name.lower() != "tunnelgw":
            pins[name.lower()] = f"{name}=={dist.version}\n"
    return "".join(sorted(pins.values()))


def _other_distribution(where: Path) -> Path:
    """A wheel of another project installing top-level `models` and `handlers` packages."""
    info = "other_project-1.0.dist-info"
    files = {
        "models/__init__.py": INSTALLED,
        "handlers/__init__.py": INSTALLED,
        f"{info}/METADATA": "Metadata-Version: 2.1\nName: other-project\nVersion: 1.0\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = ""
    for name, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=")
        record += f"{name},sha256={digest.decode()},{len(text.encode())}\n"
    files[f"{info}/RECORD"] = record + f"{info}/RECORD,,\n"
    wheel = where / "other_project-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return wheel


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> tuple[Path, Path, dict[str, str]]:
    base = tmp_path_factory.mktemp("install")
    source = base / "source"
    source.mkdir()
    for name in WHEEL_SOURCES:
        path = ROOT / name
        if path.is_dir():
            shutil.copytree(
                path, source / name, symlinks=True, ignore=shutil.ignore_patterns("__pycache__")
            )
        else:
            shutil.copy(path, source / name)
    uv = shutil.which("uv", path=str(Path(sys.executable).parent))
    assert uv, "uv is not installed beside this interpreter (pip install -e '.[test]')"
    started = time.monotonic()
    _run([uv, "build", "--wheel", "-q", "--out-dir", base / "dist", source])
    (wheel,) = (base / "dist").glob("tunnelgw-*.whl")
    built = time.monotonic()
    venv = base / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", venv])
    python = venv / "bin" / "python"
    (base / "pins.txt").write_text(_pins())
    install = [uv, "pip", "install", "-q", "--python", python]
    _run([*install, "-c", base / "pins.txt", wheel, "pytest"])
    _run([*install, "--no-deps", _other_distribution(base)])
    print(f"wheel {built - started:.1f}s, venv and install {time.monotonic() - built:.1f}s")
    project = base / "project"
    (project / "handlers").mkdir(parents=True)
    (project / "models.py").write_text(USER_MODELS)
    (project / "handlers" / "__init__.py").write_text(USER_HANDLERS)
    env = {
        name: value
        for name, value in os.environ.items()
        if name not in ("PYTHONPATH", "VIRTUAL_ENV")
        and not name.startswith(("TUNNELGW_", "PYTEST_", "COV_CORE_"))
    }
    env["PYTHONPATH"] = str(project)
    return venv, project, env


def test_the_wheel_installs_only_the_tunnelgw_package(installed):
    venv, _, _ = installed
    (site,) = venv.glob("lib/python*/site-packages")
    (dist,) = site.glob("tunnelgw-*.dist-info")
    assert (dist / "top_level.txt").read_text().split() == ["tunnelgw"]
    # The other distribution's packages are its own: tunnelgw wrote nothing beside them.
    for name in ("models", "handlers"):
        assert [p.name for p in (site / name).iterdir() if p.suffix == ".py"] == ["__init__.py"]
        assert (site / name / "__init__.py").read_text() == INSTALLED
    assert (site / "tunnelgw" / "models" / "account.py").is_file()
    assert (site / "tunnelgw" / "handlers" / "api_keys.py").is_file()
    tops = {
        name.split("/")[0]
        for name in zipfile.ZipFile(next(venv.parent.glob("dist/*.whl"))).namelist()
    }
    assert tops == {"tunnelgw", dist.name}


def test_tunnelgw_serve_beside_the_users_modules(installed):
    venv, project, env = installed
    port = _free_port()
    env = {**env, "TUNNELGW_BOOTSTRAP_TOKEN": TOKEN}
    log = project / "serve.log"
    with log.open("w") as out:
        serve = [
            "serve",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--data-dir",
            project / "data",
        ]
        server = subprocess.Popen(
            [venv / "bin" / "tunnelgw", *serve],
            cwd=project,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            assert server.poll() is None, log.read_text()
            try:
                if httpx.get(f"{url}/readyz", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
        headers = {"Authorization": f"Bearer {TOKEN}", "Service-Version": "2"}
        listed = httpx.get(f"{url}/api_keys", headers=headers, timeout=10)
        assert listed.status_code == 200, listed.text
        assert len(listed.json()["keys"]) == 1
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_the_testing_kit_beside_the_users_modules(installed):
    venv, project, env = installed
    done = _run([venv / "bin" / "python", "-c", KIT], cwd=project, env=env)
    assert done.stdout.strip() == "kit ok"


def test_the_pytest_plugin_beside_the_users_modules(installed):
    venv, project, env = installed
    tests = project / "tests"
    tests.mkdir()
    (tests / "test_user.py").write_text(PLUGIN_TEST)
    done = _run(
        [venv / "bin" / "python", "-m", "pytest", "-q", "-p", "no:cacheprovider", tests],
        cwd=project,
        env=env,
    )
    assert "1 passed" in done.stdout
