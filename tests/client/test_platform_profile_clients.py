"""The platform profile against the platform's official clients, unchanged: a live `tunnelgw
serve --profile platform` (no version header alias set: the profile accepts the clients'
`Ngrok-Version`), driven by the Python client (PyPI `ngrok-api`: its typed `Error` and
`NotFoundError`) and by the Go client (`github.com/ngrok/ngrok-api-go/v9`: `IsErrorCode`,
`IsNotFound`; tests/client/go, built with the machine's Go from the Go module proxy). The Go
run also drives AI gateway API keys (create, get, list, update, delete) and a reserved
domain's `resolves_to` as that client sends them (the Python client has neither operation
family nor an empty-list distinction: it has no AI gateway API keys at all).

Marked `client`: deselect with `-m "not client"` where the packages cannot be installed.
"""

from __future__ import annotations

import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.client.conftest import GO_CLIENT, go_env, go_toolchain
from tests.stress.server import Server

ngrok = pytest.importorskip("ngrok")

pytestmark = pytest.mark.client


@pytest.fixture(scope="module")
def client(profile_server: Server) -> Any:
    return ngrok.Client(profile_server.token, base_url=profile_server.base)


def test_python_client_typed_errors(profile_server: Server, client: Any) -> None:
    domain = f"py{uuid.uuid4().hex[:10]}.example.com"
    made = client.reserved_domains.create(domain=domain)
    with pytest.raises(ngrok.Error) as again:
        client.reserved_domains.create(domain=domain)
    assert (again.value.error_code, again.value.http_status_code) == ("ERR_NGROK_413", 400)
    assert again.value.details["tunnelgw_code"] == "ERR_DOMAIN_IN_USE"
    assert again.value.operation_id.startswith("op_")
    with pytest.raises(ngrok.NotFoundError) as missing:
        client.reserved_domains.get("rd_000000000000000000000000000")
    assert (missing.value.error_code, missing.value.http_status_code) == (None, 404)
    policy = client.ip_policies.create()
    with pytest.raises(ngrok.Error) as cidr:
        client.ip_policy_rules.create(cidr="10.0.0.0/33", ip_policy_id=policy.id, action="allow")
    assert (cidr.value.error_code, cidr.value.http_status_code) == ("ERR_NGROK_1406", 400)
    stranger = ngrok.Client("tgw_" + "0" * 43, base_url=profile_server.base)
    with pytest.raises(ngrok.Error) as refused:
        stranger.api_keys.list()
    assert (refused.value.error_code, refused.value.http_status_code) == ("ERR_NGROK_203", 403)
    client.ip_policies.delete(policy.id)
    client.reserved_domains.delete(made.id)


def test_go_client_typed_errors(profile_server: Server, tmp_path: Path) -> None:
    go = go_toolchain()
    binary = tmp_path / "goclient"
    built = subprocess.run(
        [go, "build", "-o", str(binary), "."],
        cwd=GO_CLIENT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert built.returncode == 0, built.stderr
    ran = subprocess.run(
        [str(binary)],
        env=go_env(profile_server),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "FAIL" not in ran.stdout
    assert ran.stdout.count("ok ") >= 28, ran.stdout
