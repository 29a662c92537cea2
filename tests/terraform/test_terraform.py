"""The platform's own Terraform provider (github.com/ngrok/terraform-provider-ngrok v0.8.0, on
the Go client ngrok-api-go v9), run by OpenTofu against a live `tunnelgw serve --profile
platform`: every resource and data source of the provider, applied, planned (the plan must be
empty), changed, planned again, imported, looked up (by id and by the CEL filters the provider
sends), destroyed, and the server left empty.

The server runs the platform profile: it accepts the `Ngrok-Version` header the Go client sends
and answers errors with the platform's codes, which is what the provider reads (its 404 check
is `ngrok.IsNotFound`). The binaries come from tests/terraform/build.py (built once per
machine, cached). Marked `terraform` (tox -e terraform); SQLite by default, PostgreSQL with
TUNNELGW_TEST_ENGINE=postgresql (a database on the session's throwaway cluster).
"""

from __future__ import annotations

import json
import os
import re
import secrets
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests import factories, pgcluster
from tests.stress.server import ROOT, Server
from tests.terraform import build, configs

pytestmark = pytest.mark.terraform

# Each OpenTofu command is bounded; an apply of every resource takes seconds.
TOFU_SECONDS = 300

NOT_IMPORTABLE = {
    "ngrok_secret.sec",
    "ngrok_tls_certificate.t",
    "ngrok_ssh_certificate_authority.sshca",
}

# Collections the configurations create into, and their list keys: empty after destroy.
COLLECTIONS = {
    "/ip_policies": "ip_policies",
    "/ip_policy_rules": "ip_policy_rules",
    "/ip_restrictions": "ip_restrictions",
    "/reserved_domains": "reserved_domains",
    "/reserved_addrs": "reserved_addrs",
    "/credentials": "credentials",
    "/ssh_credentials": "ssh_credentials",
    "/bot_users": "bot_users",
    "/certificate_authorities": "certificate_authorities",
    "/tls_certificates": "tls_certificates",
    "/ssh_certificate_authorities": "ssh_certificate_authorities",
    "/agent_ingresses": "ingresses",
    "/endpoints": "endpoints",
    "/event_destinations": "event_destinations",
    "/event_subscriptions": "event_subscriptions",
    "/vaults": "vaults",
    "/vault_secrets": "secrets",
}


@pytest.fixture(scope="module")
def binaries() -> Path:
    try:
        return build.build() / "bin"
    except build.BuildUnavailableError as exc:
        if os.environ.get("TUNNELGW_TERRAFORM_REQUIRED"):
            pytest.fail(f"OpenTofu or the provider could not be built: {exc}")
        pytest.skip(f"OpenTofu or the provider could not be built: {exc}")


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    url = None
    if os.environ.get("TUNNELGW_TEST_ENGINE") == "postgresql":
        # The session's throwaway cluster (tests/conftest.py), a database of this module's.
        base = os.environ["TUNNELGW_TEST_PG_BASE"]
        url = pgcluster.new_database(base, "terraform")
    server = Server(
        tmp_path_factory.mktemp("terraform"),
        url,
        "tgw_terraform_" + secrets.token_hex(12),
        workers=1,
        # The admin API loads the fixture the session data sources read.
        env={"TUNNELGW_PROFILE": "platform", "TUNNELGW_ADMIN_API": "true"},
    )
    server.start()
    try:
        yield server
    finally:
        server.stop()
        assert "Traceback" not in server.log(), server.log()[-5000:]


class Tofu:
    """`tofu` in one working directory, pointed at the built provider and the live server."""

    def __init__(self, binaries: Path, workdir: Path, live: Server) -> None:
        self.binary = binaries / "tofu"
        self.workdir = workdir
        cli_config = workdir / "dev.tfrc"
        cli_config.write_text(
            "provider_installation {\n"
            "  dev_overrides {\n"
            f'    "ngrok/ngrok" = "{binaries}"\n'
            "  }\n"
            "  direct {}\n"
            "}\n"
        )
        self.env = {
            **os.environ,
            "TF_CLI_CONFIG_FILE": str(cli_config),
            "TF_IN_AUTOMATION": "1",
            "TF_INPUT": "0",
            "CHECKPOINT_DISABLE": "1",
            "NGROK_API_KEY": live.token,
            "NGROK_API_BASE_URL": live.base,
        }

    def write(self, text: str) -> None:
        (self.workdir / "main.tf").write_text(text)

    def run(self, *args: str, ok: tuple[int, ...] = (0,)) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [str(self.binary), *args, "-no-color"],
            cwd=self.workdir,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=TOFU_SECONDS,
            check=False,
        )
        assert done.returncode in ok, (
            f"tofu {' '.join(args)} exited {done.returncode}\n{done.stdout}\n{done.stderr}"
        )
        return done

    def apply(self) -> None:
        self.run("apply", "-auto-approve")

    def assert_plan_empty(self) -> None:
        plan = self.run("plan", "-detailed-exitcode", ok=(0, 2))
        assert plan.returncode == 0, f"the plan is not empty:\n{plan.stdout}"

    def state(self) -> dict[str, Any]:
        shown = self.run("show", "-json")
        return dict(json.loads(shown.stdout))


def _resources(tofu: Tofu) -> dict[str, dict[str, Any]]:
    """The managed resources in the state, by address, with their attribute values."""
    resources = tofu.state()["values"]["root_module"]["resources"]
    return {r["address"]: r["values"] for r in resources if r["mode"] == "managed"}


def _values(tmp: Path, suffix: str) -> dict[str, str]:
    tls = factories.tls_upload(dns_names=(f"app-{suffix}.example.com",))
    return {
        "suffix": suffix,
        "ca_pem": json.dumps(factories.x509_certificate(common_names=("Terraform CA",))),
        "tls_chain_pem": json.dumps(tls.chain_pem),
        "tls_key_pem": json.dumps(tls.key_pem),
        "ssh_public_key": json.dumps(factories.ssh_keygen(tmp, "ed25519")),
    }


@pytest.fixture(scope="module")
def api(live: Server) -> Iterator[httpx.Client]:
    with httpx.Client(
        base_url=live.base,
        headers={"Authorization": f"Bearer {live.token}", "Ngrok-Version": "2"},
        timeout=30,
    ) as client:
        yield client


def _leftovers(api: httpx.Client) -> dict[str, list[str]]:
    """Every collection's objects but the caller's own API key (the bootstrap key)."""
    left: dict[str, list[str]] = {}
    for path, key in COLLECTIONS.items():
        got = api.get(path, params={"limit": "100"})
        assert got.status_code == 200, (path, got.text)
        ids = [item["id"] for item in got.json()[key]]
        if ids:
            left[path] = ids
    keys = api.get("/api_keys").json()["keys"]
    if len(keys) != 1:
        left["/api_keys"] = [k["id"] for k in keys]
    return left


def test_every_resource_and_data_source(
    binaries: Path, live: Server, api: httpx.Client, tmp_path: Path
) -> None:
    assert _leftovers(api) == {}
    run = _values(tmp_path, uuid.uuid4().hex[:8])
    work = tmp_path / "config"
    work.mkdir()
    tofu = Tofu(binaries, work, live)

    # 1. apply every resource, then the data sources over them; the plan is empty.
    tofu.write(configs.render({**configs.STEP_ONE, **run}, data_sources=False))
    tofu.apply()
    tofu.assert_plan_empty()
    tofu.write(configs.render({**configs.STEP_ONE, **run}, data_sources=True))
    tofu.apply()
    tofu.assert_plan_empty()
    looked_up = json.loads(tofu.run("output", "-json", "looked_up").stdout)
    state = _resources(tofu)
    assert looked_up["domain_by_name"] == state["ngrok_domain.d"]["id"]
    assert looked_up["addr_by_addr"] == state["ngrok_tcp_address.a"]["id"]
    assert looked_up["ingress_by_name"] == state["ngrok_agent_ingress.ai"]["id"]
    assert looked_up["vault_by_name"] == state["ngrok_vault.v"]["id"]
    assert looked_up["secret_by_name"] == state["ngrok_secret.sec"]["id"]
    assert looked_up["rule_cidr"] == configs.STEP_ONE["cidr"]

    # 2. change every updatable attribute; applied in place or replaced, the plan is empty.
    tofu.write(configs.render({**configs.STEP_TWO, **run}, data_sources=True))
    tofu.apply()
    tofu.assert_plan_empty()
    looked_up = json.loads(tofu.run("output", "-json", "looked_up").stdout)
    assert looked_up["rule_cidr"] == configs.STEP_TWO["cidr"]
    assert looked_up["policy"] == configs.STEP_TWO["desc"]

    # 3. import: forget every resource, import it by id, and the plan is empty again. Not
    # re-imported: those whose configuration holds a value the platform's API never returns
    # (a secret's value, a TLS certificate's private key, an SSH CA's key type and curve,
    # which only its create takes), which an import cannot know.
    for address, values in _resources(tofu).items():
        if address in NOT_IMPORTABLE:
            continue
        tofu.run("state", "rm", address)
        tofu.run("import", address, values["id"])
    tofu.assert_plan_empty()

    # 4. destroy, and nothing is left on the server.
    tofu.run("destroy", "-auto-approve")
    assert _leftovers(api) == {}


def test_session_data_sources(
    binaries: Path, live: Server, api: httpx.Client, tmp_path: Path
) -> None:
    """The three data sources over objects only an agent or a visitor makes (a tunnel
    session, an application user and session), loaded as a fixture."""
    name = f"front{uuid.uuid4().hex[:8]}"
    loaded = api.post(
        "/_admin/fixtures",
        json={
            "version": 1,
            "api": {
                "credentials": [{"ref": "cred", "acl": ["bind:*.tunnelgw.test"]}],
                "reserved_domains": [{"ref": "site", "name": name}],
                "endpoints": [
                    {
                        "ref": "front",
                        "url": f"https://{name}.tunnelgw.test",
                        "traffic_policy": "on_http_request: [{actions: [{type: deny}]}]",
                    }
                ],
            },
            "agent_sessions": [
                {
                    "ref": "agent",
                    "credential_id": "@cred",
                    "os": "linux",
                    "endpoints": [{"url": "https://agent.tunnelgw.test"}],
                }
            ],
            "application_users": [{"ref": "bob", "username": "bob"}],
            "application_sessions": [
                {"ref": "visit", "application_user_id": "@bob", "endpoint_id": "@front"}
            ],
        },
    )
    assert loaded.status_code in (200, 201), loaded.text
    labels = loaded.json()["labels"]
    work = tmp_path / "sessions"
    work.mkdir()
    tofu = Tofu(binaries, work, live)
    tofu.write(
        configs.PROVIDER
        + f"""
data "ngrok_tunnel_session" "s" {{ id = "{labels["agent"]}" }}
data "ngrok_application_user" "u" {{ id = "{labels["bob"]}" }}
data "ngrok_application_session" "v" {{ id = "{labels["visit"]}" }}
output "sessions" {{
  value = {{
    os       = data.ngrok_tunnel_session.s.os
    username = data.ngrok_application_user.u.username
    user     = data.ngrok_application_session.v.application_user_id
    endpoint = data.ngrok_application_session.v.endpoint_id
  }}
}}
"""
    )
    tofu.apply()
    tofu.assert_plan_empty()
    got = json.loads(tofu.run("output", "-json", "sessions").stdout)
    assert got == {
        "os": "linux",
        "username": "bob",
        "user": labels["bob"],
        "endpoint": labels["front"],
    }
    assert api.post("/_admin/reset").status_code == 200


def _docs_configuration() -> str:
    """The configuration of docs/terraform.md: its ```hcl block that starts `terraform {`."""
    page = (ROOT / "docs" / "terraform.md").read_text()
    found = [
        b for b in re.findall(r"```hcl\n(.*?)```", page, re.DOTALL) if b.startswith("terraform {")
    ]
    assert len(found) == 1, "docs/terraform.md has one example configuration"
    return found[0]


def test_the_docs_page_configuration_applies(
    binaries: Path, live: Server, api: httpx.Client, tmp_path: Path
) -> None:
    """docs/terraform.md's example, as printed: apply, an empty plan, import, destroy."""
    tofu = Tofu(binaries, tmp_path, live)
    tofu.write(_docs_configuration())
    tofu.apply()
    tofu.assert_plan_empty()
    domain = _resources(tofu)["ngrok_domain.app"]
    assert json.loads(tofu.run("output", "-json", "domain_id").stdout) == domain["id"]
    tofu.run("state", "rm", "ngrok_domain.app")
    tofu.run("import", "ngrok_domain.app", domain["id"])
    tofu.assert_plan_empty()
    tofu.run("destroy", "-auto-approve")
    assert _leftovers(api) == {}
