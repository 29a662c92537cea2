"""CA delete versus signing, raced on 2 workers, SQLite and PostgreSQL: the delete either
loses (409 ERR_SSH_CA_IN_USE) or wins, and then no unexpired certificate names the deleted
CA; signing after the delete is 404 ERR_REFERENCE_NOT_FOUND; never a 5xx."""

from __future__ import annotations

import asyncio
from collections import Counter

import httpx
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519

from tests.stress.conftest import CYCLES
from tests.stress.server import Server

pytestmark = pytest.mark.stress
ROUNDS = max(CYCLES * 4, 4)
SIGNERS = 8


def _user_key() -> str:
    public = ed25519.Ed25519PrivateKey.generate().public_key()
    return public.public_bytes(
        serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
    ).decode()


async def _round(http: httpx.AsyncClient, outcomes: Counter[str]) -> None:
    ca = (await http.post("/ssh_certificate_authorities", json={})).json()["id"]
    body = {"ssh_certificate_authority_id": ca, "public_key": _user_key(), "principals": ["u"]}

    async def sign() -> httpx.Response:
        return await http.post("/ssh_user_certificates", json=body)

    responses = await asyncio.gather(
        *(sign() for _ in range(SIGNERS // 2)),
        http.delete(f"/ssh_certificate_authorities/{ca}"),
        *(sign() for _ in range(SIGNERS // 2)),
    )
    deleted = responses[SIGNERS // 2]
    signs = responses[: SIGNERS // 2] + responses[SIGNERS // 2 + 1 :]
    assert all(r.status_code < 500 for r in responses), [r.text for r in responses]
    for r in signs:
        outcomes[f"sign {r.status_code}"] += 1
        assert r.status_code in (201, 404), r.text
        if r.status_code == 404:
            assert r.json()["error_code"] == "ERR_REFERENCE_NOT_FOUND"
    outcomes[f"delete {deleted.status_code}"] += 1
    assert deleted.status_code in (204, 409), deleted.text
    if deleted.status_code == 409:
        assert deleted.json()["error_code"] == "ERR_SSH_CA_IN_USE"
        assert any(r.status_code == 201 for r in signs)
        return
    # The CA is gone: no certificate signed by it may exist (they would all be unexpired).
    assert (await http.get(f"/ssh_certificate_authorities/{ca}")).status_code == 404
    signed = [r.json()["id"] for r in signs if r.status_code == 201]
    for cert in signed:
        assert (await http.get(f"/ssh_user_certificates/{cert}")).status_code == 404, (
            "a certificate of a deleted CA survived"
        )
    assert not signed, "a certificate was acknowledged for a CA that was then deleted"


def test_delete_versus_sign(server: Server) -> None:
    outcomes: Counter[str] = Counter()

    async def run() -> None:
        async with server.client() as http:
            for _ in range(ROUNDS):
                await _round(http, outcomes)

    asyncio.run(run())
    print(f"\n{ROUNDS} rounds of 1 delete vs {SIGNERS} signs: {dict(outcomes)}")
