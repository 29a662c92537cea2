"""Deterministic runs (`id_seed`): an app seeded the same way and sent the same requests, on a
fresh database, answers the same ids, tokens, DNS targets, ports, serial numbers and
operation ids; what stays random or follows the wall clock is listed in NOT_REPEATABLE."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.testclient import TestClient

from tests.factories import ssh_keygen
from tests.stress.server import Server
from tunnelgw.core import ids
from tunnelgw.core.settings import Settings
from tunnelgw.http.app import create_app, state_of
from tunnelgw.migrations import migrate
from tunnelgw.services import accounts

# What differs between two seeded runs: the wall clock, and what a fresh key pair or a
# signature determines (key material stays truly random).
WALL_CLOCK = {
    "created_at",
    "started_at",
    "renews_at",
    "issued_at",
    "not_before",
    "not_after",
    "valid_after",
    "valid_until",
}
NOT_REPEATABLE = {
    "ssh_ca": {"public_key"},  # a fresh key pair
    "ssh_user_certificate": {"certificate"},  # signed with it
    "tls_certificate": {"certificate_pem"},  # a fresh key pair, signed by a fresh CA key
}


# The steps of `_run` that create a resource, in order.
CREATED = (
    "api_key",
    "wildcard_domain",
    "shared_domain",
    "addr",
    "ssh_ca",
    "ssh_user_certificate",
    "tls_certificate",
)


@pytest.fixture(autouse=True)
def _unseeded() -> Iterator[None]:
    """Each run starts as a fresh process would; no seed leaks to other tests."""
    ids.seed(None)
    yield
    ids.seed(None)


def _masked(value: Any, hide: set[str]) -> Any:
    if isinstance(value, dict):
        return {
            key: "<varies>" if key in WALL_CLOCK or key in hide else _masked(item, set())
            for key, item in value.items()
        }
    return value


def _repeatable(run: dict[str, Any]) -> dict[str, Any]:
    return {step: _masked(answer, NOT_REPEATABLE.get(step, set())) for step, answer in run.items()}


def _run(settings: Settings, data_dir: Path, seed: str | None, user_key: str) -> dict[str, Any]:
    """One server life: a fresh database, an app seeded with `seed`, a fixed request
    sequence; what each step answered (body, and the operation-id header under `op`)."""
    ids.seed(None)  # a fresh process
    settings = settings.model_copy(
        update={"data_dir": data_dir, "database_url": None, "id_seed": seed}
    )
    data_dir.mkdir()
    migrate.upgrade(settings.resolved_database_url())
    app = create_app(settings)
    seen: dict[str, Any] = {}
    with TestClient(app, base_url="http://testserver", raise_server_exceptions=False) as client:
        state = state_of(app)

        async def bootstrap() -> accounts.Credentials:
            async with state.database.write() as unit:
                return await accounts.create_account_with_admin(unit, "default")

        creds = client.portal.call(bootstrap)  # type: ignore[union-attr]
        seen["credentials"] = vars(creds)
        headers = {"Authorization": f"Bearer {creds.token}", "Service-Version": "2"}

        def call(step: str, method: str, path: str, body: Any = None) -> dict[str, Any]:
            response = client.request(method, path, json=body, headers=headers)
            assert response.status_code < 500, response.text
            seen[step] = {**response.json(), "op": response.headers["operation-id"]}
            return dict(response.json())

        call("api_key", "POST", "/api_keys", {"description": "second"})
        wildcard = {"domain": "*.example.com", "certificate_management_policy": {}}
        domain = call("wildcard_domain", "POST", "/reserved_domains", wildcard)
        call("shared_domain", "POST", "/reserved_domains", {"name": "plain"})
        call("addr", "POST", "/reserved_addrs", {"region": "eu"})
        ca = call("ssh_ca", "POST", "/ssh_certificate_authorities", {"description": "ca"})
        user_cert = {"ssh_certificate_authority_id": ca["id"], "public_key": user_key}
        call("ssh_user_certificate", "POST", "/ssh_user_certificates", user_cert)
        # The certificate management job completes at this read (no issue delay).
        settled = call("settled_domain", "GET", f"/reserved_domains/{domain['id']}")
        call("tls_certificate", "GET", f"/tls_certificates/{settled['certificate']['id']}")
        call("error", "GET", "/api_keys/ak_" + "0" * 27)  # an error body with its op id
    return seen


@pytest.fixture
def user_key(tmp_path: Path) -> str:
    return " ".join(ssh_keygen(tmp_path, "ed25519").split()[:2])


def test_same_seed_same_answers_other_seed_others(settings, tmp_path, user_key):
    first = _run(settings, tmp_path / "a", "snapshot-1", user_key)
    again = _run(settings, tmp_path / "b", "snapshot-1", user_key)
    assert _repeatable(again) == _repeatable(first)
    # What the seed governs, spelled out (the mask hides none of it).
    assert again["credentials"] == first["credentials"]  # ids and the token
    for step in first:
        assert again[step].get("id") == first[step].get("id")
        assert again[step].get("op") == first[step].get("op")
    assert again["api_key"]["token"] == first["api_key"]["token"]
    for target in ("cname_target", "acme_challenge_cname_target"):
        assert again["wildcard_domain"][target] == first["wildcard_domain"][target]
    assert again["addr"]["addr"] == first["addr"]["addr"]
    assert again["tls_certificate"]["serial_number"] == first["tls_certificate"]["serial_number"]
    # What it does not: key material.
    assert again["ssh_ca"]["public_key"] != first["ssh_ca"]["public_key"]
    pems = {run["tls_certificate"]["certificate_pem"] for run in (first, again)}
    assert len(pems) == 2
    # Ids are well-formed and increase in creation order.
    creds = first["credentials"]
    made = [creds["account_id"], creds["principal_id"], creds["api_key_id"]]
    made += [first[step]["id"] for step in CREATED]
    assert all(ids.prefix_of(value) for value in made)
    bodies = [value.partition("_")[2] for value in made]
    assert bodies == sorted(set(bodies))

    other = _run(settings, tmp_path / "c", "snapshot-2", user_key)
    for field in ("account_id", "principal_id", "api_key_id", "token"):
        assert other["credentials"][field] != first["credentials"][field]
    for step in CREATED:
        assert other[step]["id"] != first[step]["id"]
    for step in set(first) - {"credentials"}:
        assert other[step]["op"] != first[step]["op"]
    assert other["api_key"]["token"] != first["api_key"]["token"]
    assert other["wildcard_domain"]["cname_target"] != first["wildcard_domain"]["cname_target"]
    assert other["tls_certificate"]["serial_number"] != first["tls_certificate"]["serial_number"]


def test_unseeded_runs_differ(settings, tmp_path, user_key):
    first = _run(settings, tmp_path / "a", None, user_key)
    again = _run(settings, tmp_path / "b", None, user_key)
    assert ids.current_seed() is None
    assert first["credentials"]["token"] != again["credentials"]["token"]
    assert first["credentials"]["account_id"] != again["credentials"]["account_id"]
    assert first["api_key"]["op"] != again["api_key"]["op"]
    assert first["wildcard_domain"]["cname_target"] != again["wildcard_domain"]["cname_target"]
    assert first["tls_certificate"]["serial_number"] != again["tls_certificate"]["serial_number"]


def _serve_once(data_dir: Path, seed: str, polls: int) -> dict[str, Any]:
    """A real `tunnelgw serve --deterministic-ids` (the CLI seeds, bootstraps, then the app
    continues the sequence) on a fresh data dir; `polls` extra readiness checks first."""
    data_dir.mkdir()
    server = Server(
        data_dir,
        None,
        "tgw_fixed_3VqP8sLk2Wn7Xc4Hd9Rb6Ty1Mz5Gf0Ja",
        workers=1,
        env={"TUNNELGW_ID_SEED": seed},
    )
    server.start()
    try:
        with httpx.Client(base_url=server.base, headers=server.headers(), timeout=30) as client:
            for _ in range(polls):
                assert client.get("/readyz").status_code == 200
            key = client.post("/api_keys", json={})
            domain = client.post("/reserved_domains", json={"domain": "app.example.com"})
            missing = client.get("/api_keys/ak_" + "0" * 27)
            listed = client.get("/api_keys").json()["keys"]
            bootstrap_key = next(item for item in listed if item["id"] != key.json()["id"])
    finally:
        server.stop()
    assert "Traceback" not in server.log(), server.log()[-5000:]
    return {
        "bootstrap_key": (bootstrap_key["id"], bootstrap_key["owner_id"]),
        "key": (key.json()["id"], key.json()["token"], key.headers["operation-id"]),
        "domain": (domain.json()["id"], domain.json()["cname_target"]),
        "missing": missing.json()["details"]["operation_id"],
    }


def test_a_real_server_repeats_itself_whatever_the_readiness_polls(tmp_path):
    first = _serve_once(tmp_path / "a", "snapshot", polls=0)
    again = _serve_once(tmp_path / "b", "snapshot", polls=7)
    assert again == first
    # The app continued the sequence the CLI's bootstrap started (it did not restart it).
    made = [first["bootstrap_key"][0], first["key"][0], first["domain"][0]]
    bodies = [value.partition("_")[2] for value in made]
    assert bodies == sorted(set(bodies))
