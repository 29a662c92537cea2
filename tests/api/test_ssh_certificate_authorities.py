"""SSH certificate authorities: /ssh_certificate_authorities (spec 4.5): key generation,
private keys encrypted at rest, and the in-use rule on delete."""

from __future__ import annotations

import pytest
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from sqlmodel import select

from tests.factories import assert_error, database_dump, in_dump, ssh_keygen
from tunnelgw.crypto import keys, ssh
from tunnelgw.models import SshCertificateAuthority

PATH = "/ssh_certificate_authorities"
CERTS = "/ssh_user_certificates"


def test_create_get_list_update_delete(admin):
    created = admin.post(PATH, json={"description": "prod", "metadata": '{"env": "prod"}'})
    assert created.status_code == 201, created.text
    ca = created.json()
    assert set(ca) == {
        "id",
        "uri",
        "created_at",
        "description",
        "metadata",
        "public_key",
        "key_type",
    }
    assert ca["id"].startswith("sshca_")
    assert ca["uri"] == f"http://testserver{PATH}/{ca['id']}"
    assert ca["key_type"] == "ed25519"
    assert ca["public_key"].startswith("ssh-ed25519 AAAA")
    assert len(ca["public_key"].split()) == 2

    url = f"{PATH}/{ca['id']}"
    assert admin.get(url).json() == ca
    assert ca in admin.get(PATH).json()["ssh_certificate_authorities"]
    updated = admin.patch(url, json={"description": "production"}).json()
    assert updated == {**ca, "description": "production"}
    assert admin.delete(url).status_code == 204
    assert_error(admin.get(url), 404, "ERR_NOT_FOUND")


@pytest.mark.parametrize(
    ("body", "key_type", "prefix"),
    [
        (None, "ed25519", "ssh-ed25519"),
        ({"private_key_type": "", "elliptic_curve": "", "key_size": 0}, "ed25519", "ssh-ed25519"),
        ({"private_key_type": None, "key_size": None}, "ed25519", "ssh-ed25519"),
        ({"private_key_type": "ed25519"}, "ed25519", "ssh-ed25519"),
        ({"private_key_type": "ecdsa"}, "ecdsa", "ecdsa-sha2-nistp256"),
        ({"private_key_type": "ecdsa", "elliptic_curve": "p384"}, "ecdsa", "ecdsa-sha2-nistp384"),
        ({"private_key_type": "ecdsa", "elliptic_curve": "p521"}, "ecdsa", "ecdsa-sha2-nistp521"),
        ({"private_key_type": "rsa", "key_size": 2048}, "rsa", "ssh-rsa"),
    ],
)
def test_key_types(admin, body, key_type, prefix):
    kwargs = {} if body is None else {"json": body}
    ca = admin.post(PATH, **kwargs).json()
    assert ca["key_type"] == key_type
    assert ca["public_key"].split()[0] == prefix


def _stored(factory, ca_id: str):  # type: ignore[no-untyped-def]
    async def row(session):  # type: ignore[no-untyped-def]
        query = select(SshCertificateAuthority).where(SshCertificateAuthority.id == ca_id)
        return (await session.exec(query)).one()

    stored = factory.query(row)
    der = keys.unwrap(keys.current(), stored.wrapped_private_key, ca_id.encode())
    return ssh.load_ca_key(der), der


def test_rsa_defaults_to_4096_bits(admin, factory):
    ca = admin.post(PATH, json={"private_key_type": "rsa"}).json()
    key, _ = _stored(factory, ca["id"])
    assert isinstance(key, rsa.RSAPrivateKey)
    assert key.key_size == 4096
    assert ssh.public_key_line(key.public_key()) == ca["public_key"]


def _secrets(key) -> list[bytes]:  # type: ignore[no-untyped-def]
    """The raw private values of a key, as they would appear if stored unencrypted."""
    if isinstance(key, ed25519.Ed25519PrivateKey):
        return [key.private_bytes_raw()]
    if isinstance(key, ec.EllipticCurvePrivateKey):
        value = key.private_numbers().private_value
        return [value.to_bytes((value.bit_length() + 7) // 8, "big")]
    numbers = key.private_numbers()
    return [n.to_bytes((n.bit_length() + 7) // 8, "big") for n in (numbers.d, numbers.p)]


def test_database_holds_no_private_key_in_the_clear(admin, factory, settings):
    made = [
        admin.post(PATH, json=body).json()
        for body in (
            {},
            {"private_key_type": "ecdsa", "elliptic_curve": "p521"},
            {"private_key_type": "rsa", "key_size": 2048},
        )
    ]
    dump = database_dump(settings)
    for marker in (b"PRIVATE KEY", b"openssh-key-v1"):
        assert marker not in dump
    for ca in made:
        assert ca["public_key"].encode() in dump  # the right file, and it is readable
        key, der = _stored(factory, ca["id"])
        assert not in_dump(der, dump)
        assert not any(in_dump(secret, dump) for secret in _secrets(key))


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"key_size": 2048}, "key_size"),
        ({"private_key_type": "ed25519", "key_size": 4096}, "key_size"),
        ({"private_key_type": "ecdsa", "key_size": 2048}, "key_size"),
        ({"elliptic_curve": "p256"}, "elliptic_curve"),
        ({"private_key_type": "rsa", "elliptic_curve": "p384"}, "elliptic_curve"),
        ({"private_key_type": "dsa"}, "private_key_type"),
        ({"private_key_type": "RSA"}, "private_key_type"),
        ({"elliptic_curve": "p192", "private_key_type": "ecdsa"}, "elliptic_curve"),
        ({"key_size": 1024, "private_key_type": "rsa"}, "key_size"),
        ({"key_size": 2**70, "private_key_type": "rsa"}, "key_size"),
    ],
)
def test_invalid_key_requests(admin, body, field):
    """Values outside the enums (spec) and type mismatches (handler) alike."""
    before = admin.get(PATH).json()["ssh_certificate_authorities"]
    error = assert_error(admin.post(PATH, json=body), 400, "ERR_INVALID_FIELD")
    assert error["details"]["field"] == field
    assert admin.get(PATH).json()["ssh_certificate_authorities"] == before


def test_wrong_types(admin):
    body = {"key_size": "2048", "private_key_type": "rsa"}
    error = assert_error(admin.post(PATH, json=body), 400, "ERR_WRONG_TYPE")
    assert error["details"]["field"] == "key_size"


@pytest.mark.parametrize(
    ("body", "code", "field"),
    [
        ({"private_key_type": "rsa"}, "ERR_UNKNOWN_FIELD", "private_key_type"),
        ({"public_key": "ssh-ed25519 AAAA"}, "ERR_UNKNOWN_FIELD", "public_key"),
        ({"description": "é" * 128}, "ERR_FIELD_TOO_LONG", "description"),
        ({"metadata": "x" * 4097}, "ERR_FIELD_TOO_LONG", "metadata"),
    ],
)
def test_update_changes_only_description_and_metadata(admin, body, code, field):
    ca = admin.post(PATH, json={"description": "keep"}).json()
    url = f"{PATH}/{ca['id']}"
    assert assert_error(admin.patch(url, json=body), 400, code)["details"]["field"] == field
    assert admin.get(url).json() == ca


def _sign(client, ca_id: str, tmp_path, **fields):  # type: ignore[no-untyped-def]
    body = {"ssh_certificate_authority_id": ca_id, "public_key": ssh_keygen(tmp_path, "ed25519")}
    created = client.post(CERTS, json={**body, **fields})
    assert created.status_code == 201, created.text
    return created.json()


def test_delete_is_refused_while_certificates_are_unexpired(admin, tmp_path):
    ca = admin.post(PATH, json={}).json()
    url = f"{PATH}/{ca['id']}"
    current = _sign(admin, ca["id"], tmp_path)
    future = _sign(admin, ca["id"], tmp_path, valid_after="2999-01-01T00:00:00Z")
    expired = _sign(
        admin,
        ca["id"],
        tmp_path,
        valid_after="2020-01-01T00:00:00Z",
        valid_until="2020-01-02T00:00:00Z",
    )
    error = assert_error(admin.delete(url), 409, "ERR_SSH_CA_IN_USE")
    assert error["details"]["id"] == ca["id"]
    assert admin.delete(f"{CERTS}/{current['id']}").status_code == 204
    assert_error(admin.delete(url), 409, "ERR_SSH_CA_IN_USE")  # the future one is unexpired
    assert admin.delete(f"{CERTS}/{future['id']}").status_code == 204

    assert admin.delete(url).status_code == 204
    kept = admin.get(f"{CERTS}/{expired['id']}").json()
    assert kept["ssh_certificate_authority_id"] == ca["id"]  # expired ones outlive the CA


def test_accounts_are_isolated(admin, other, tmp_path):
    ca = admin.post(PATH, json={"description": "mine"}).json()
    url = f"{PATH}/{ca['id']}"
    assert_error(other.get(url), 404, "ERR_NOT_FOUND")
    assert_error(other.patch(url, json={"description": "theirs"}), 404, "ERR_NOT_FOUND")
    assert_error(other.delete(url), 404, "ERR_NOT_FOUND")
    assert other.get(PATH).json()["ssh_certificate_authorities"] == []
    assert admin.get(url).json()["description"] == "mine"


def test_list_pages(admin):
    made = [admin.post(PATH, json={}).json()["id"] for _ in range(3)]
    first = admin.get(PATH, params={"limit": 2}).json()
    assert [c["id"] for c in first["ssh_certificate_authorities"]] == made[::-1][:2]
    second = admin.get(first["next_page_uri"].removeprefix("http://testserver")).json()
    assert [c["id"] for c in second["ssh_certificate_authorities"]] == [made[0]]
    assert second["next_page_uri"] is None
    assert_error(
        admin.get(PATH, params={"before_id": made[0].replace("sshca_", "sucrt_")}),
        400,
        "ERR_INVALID_PARAMETER",
    )
