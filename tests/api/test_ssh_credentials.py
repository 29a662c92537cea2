"""SSH credentials (`/ssh_credentials`): an SSH public key checked as SSH user certificates
check theirs (the same catalog codes), kept as sent and never changed, with the ACL rules
and ownership of tunnel credentials (tests/api/test_credentials.py covers both for those)."""

from __future__ import annotations

import pytest

from tests.api.test_ssh_user_certificates import SK_KEY
from tests.factories import assert_error, ssh_keygen

PATH = "/ssh_credentials"


@pytest.mark.parametrize(("key_type", "bits"), [("ed25519", None), ("ecdsa", 384), ("rsa", 2048)])
def test_create_get_list_update_delete(admin, tmp_path, key_type, bits):
    public_key = ssh_keygen(tmp_path, key_type, bits)
    made = admin.post(
        PATH, json={"public_key": public_key, "acl": ["bind:*.example.com"], "description": "d"}
    )
    assert made.status_code == 201, made.text
    created = made.json()
    assert created["id"].startswith("sshcr_")
    assert created["uri"] == f"http://testserver{PATH}/{created['id']}"
    assert created["public_key"] == public_key  # as sent, comment included
    assert (created["acl"], created["owner_id"]) == (
        ["bind:*.example.com"],
        admin.creds.principal_id,
    )
    assert "token" not in created
    url = f"{PATH}/{created['id']}"
    assert admin.get(url).json() == created
    assert admin.get(PATH).json()["ssh_credentials"] == [created]
    changed = admin.patch(url, json={"metadata": "m", "acl": ["bind:env=prod"]}).json()
    assert changed == {**created, "metadata": "m", "acl": ["bind:env=prod"]}
    assert admin.patch(url, json={"description": "e", "acl": None}).json()["acl"] == [
        "bind:env=prod"
    ]
    assert admin.patch(url, json={"acl": []}).json() == {**changed, "description": "e", "acl": []}
    assert admin.delete(url).status_code == 204
    assert_error(admin.get(url), 404, "ERR_NOT_FOUND")


def test_the_key_is_kept_as_sent(admin, tmp_path):
    line = ssh_keygen(tmp_path, "ed25519") + "\n"
    assert admin.post(PATH, json={"public_key": line}).json()["public_key"] == line


def test_the_key_cannot_change(admin, tmp_path):
    made = admin.post(PATH, json={"public_key": ssh_keygen(tmp_path, "ed25519")}).json()
    url = f"{PATH}/{made['id']}"
    other_key = ssh_keygen(tmp_path, "ed25519")
    body = assert_error(admin.patch(url, json={"public_key": other_key}), 400, "ERR_UNKNOWN_FIELD")
    assert body["details"]["field"] == "public_key"
    assert admin.get(url).json()["public_key"] == made["public_key"]


@pytest.mark.parametrize(
    ("public_key", "code"),
    [
        ("", "ERR_INVALID_SSH_PUBLIC_KEY"),
        ("not a key", "ERR_INVALID_SSH_PUBLIC_KEY"),
        ("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIA6xCuXq9lVNGr", "ERR_INVALID_SSH_PUBLIC_KEY"),
        ("ssh-ed25519 " + "A" * 8000, "ERR_INVALID_SSH_PUBLIC_KEY"),
        ("ssh-foo AAAAB3NzaC1yc2E", "ERR_INVALID_SSH_PUBLIC_KEY"),
        (SK_KEY, "ERR_UNSUPPORTED_SSH_KEY_TYPE"),
        ("ssh-dss AAAAB3NzaC1kc3MAAACBAP", "ERR_UNSUPPORTED_SSH_KEY_TYPE"),
        ("ssh-ed25519-cert-v01@openssh.com AAAAIHNzaC1l", "ERR_UNSUPPORTED_SSH_KEY_TYPE"),
    ],
)
def test_an_invalid_key_is_refused_as_for_ssh_user_certificates(admin, public_key, code):
    body = assert_error(admin.post(PATH, json={"public_key": public_key}), 400, code)
    assert body["details"]["field"] == "public_key"
    assert admin.get(PATH).json()["ssh_credentials"] == []


def test_an_rsa_key_below_1024_bits_is_refused(admin, tmp_path):
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    # cryptography will not generate one; any odd 768-bit modulus makes such a public key.
    small = rsa.RSAPublicNumbers(65537, (1 << 767) | 0xF1).public_key()
    line = small.public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    refused = admin.post(PATH, json={"public_key": line.decode()})
    assert_error(refused, 400, "ERR_INVALID_SSH_PUBLIC_KEY")


def test_required_fields_and_rules(admin, tmp_path):
    assert_error(admin.post(PATH, json={}), 400, "ERR_MISSING_FIELD")
    key = ssh_keygen(tmp_path, "ed25519")
    refused = admin.post(PATH, json={"public_key": key, "acl": ["*", "bind:a..b"]})
    assert assert_error(refused, 400, "ERR_INVALID_ACL_RULE")["details"]["field"] == "acl.1"
    too_long = {"public_key": f"{key} {'c' * 16384}"}
    assert_error(admin.post(PATH, json=too_long), 400, "ERR_FIELD_TOO_LONG")
    assert admin.get(PATH).json()["ssh_credentials"] == []
