"""SSH user certificates: /ssh_user_certificates (spec 4.6). Issued certificates are read
back with `ssh-keygen -L`, which verifies the CA's signature."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.factories import (
    assert_error,
    ssh_certificate_listing,
    ssh_fingerprint,
    ssh_keygen,
)
from tunnelgw.core.errors import ApiError, Code
from tunnelgw.crypto import keys
from tunnelgw.models import SshCertificateAuthority
from tunnelgw.services import ssh_signing

PATH = "/ssh_user_certificates"
CAS = "/ssh_certificate_authorities"
SK_KEY = (
    "sk-ssh-ed25519@openssh.com AAAAGnNrLXNzaC1lZDI1NTE5QG9wZW5zc2guY29tAAAAIJ8XOvT7gCtuKVr"
    "M2cbwyPWpJHjB3mlc0Yq7/yPk4YzDAAAABHNzaDo="
)


@pytest.fixture
def ca(admin):  # type: ignore[no-untyped-def]
    return admin.post(CAS, json={"description": "test ca"}).json()


def _body(ca_id: str, public_key: str, **fields):  # type: ignore[no-untyped-def]
    return {"ssh_certificate_authority_id": ca_id, "public_key": public_key, **fields}


def test_create_get_list_update_delete(admin, ca, tmp_path):
    user_key = ssh_keygen(tmp_path, "ed25519")
    created = admin.post(
        PATH,
        json=_body(
            ca["id"],
            user_key,
            principals=["alice", "ops"],
            critical_options={"force-command": "/usr/bin/uptime", "source-address": "10.0.0.0/8"},
            valid_after="2026-11-21T10:11:14+01:00",
            valid_until="2026-11-22T09:11:14.75Z",
            description="alice",
            metadata='{"ticket": 1}',
        ),
    )
    assert created.status_code == 201, created.text
    cert = created.json()
    assert cert["id"].startswith("sucrt_")
    assert cert["uri"] == f"http://testserver{PATH}/{cert['id']}"
    assert cert["public_key"] == " ".join(user_key.split()[:2])
    assert cert["key_type"] == "ed25519"
    assert cert["ssh_certificate_authority_id"] == ca["id"]
    assert cert["principals"] == ["alice", "ops"]
    assert cert["critical_options"] == {
        "force-command": "/usr/bin/uptime",
        "source-address": "10.0.0.0/8",
    }
    assert cert["extensions"] == {"permit-pty": "", "permit-user-rc": ""}
    assert (cert["valid_after"], cert["valid_until"]) == (
        "2026-11-21T09:11:14Z",
        "2026-11-22T09:11:14Z",
    )
    assert cert["certificate"].startswith("ssh-ed25519-cert-v01@openssh.com AAAA")
    assert (cert["description"], cert["metadata"]) == ("alice", '{"ticket": 1}')

    info = ssh_certificate_listing(cert["certificate"], tmp_path)
    assert info["Signing CA"].split()[1] == ssh_fingerprint(ca["public_key"], tmp_path)
    assert info["Public key"].split()[1] == ssh_fingerprint(user_key, tmp_path)
    assert info["Key ID"] == f'"{cert["id"]}"'
    assert 0 <= int(info["Serial"]) < 2**64
    assert info["Valid"] == "from 2026-11-21T09:11:14 to 2026-11-22T09:11:14"
    assert info["Principals"] == ["alice", "ops"]
    assert info["Critical Options"] == [
        "force-command /usr/bin/uptime",
        "source-address 10.0.0.0/8",
    ]
    assert info["Extensions"] == ["permit-pty", "permit-user-rc"]

    url = f"{PATH}/{cert['id']}"
    assert admin.get(url).json() == cert
    assert cert in admin.get(PATH).json()["ssh_user_certificates"]
    updated = admin.patch(url, json={"description": "alice (on call)"}).json()
    assert updated == {**cert, "description": "alice (on call)"}
    assert admin.delete(url).status_code == 204
    assert_error(admin.get(url), 404, "ERR_NOT_FOUND")


@pytest.mark.parametrize(
    "unset",
    [
        {},
        {"principals": [], "critical_options": {}, "extensions": {}},
        {"principals": None, "critical_options": None, "extensions": None},
        {"valid_after": "", "valid_until": "", "critical_options": {"force-command": ""}},
        {"valid_after": None, "valid_until": None},
    ],
)
def test_defaults(admin, ca, tmp_path, unset):
    before = datetime.now(UTC).replace(microsecond=0)
    cert = admin.post(PATH, json=_body(ca["id"], ssh_keygen(tmp_path, "ed25519"), **unset))
    assert cert.status_code == 201, cert.text
    cert = cert.json()
    after = datetime.fromisoformat(cert["valid_after"])
    assert before <= after <= datetime.now(UTC)
    assert datetime.fromisoformat(cert["valid_until"]) - after == timedelta(hours=24)
    assert (cert["principals"], cert["critical_options"]) == ([], {})
    assert cert["extensions"] == {"permit-pty": "", "permit-user-rc": ""}
    info = ssh_certificate_listing(cert["certificate"], tmp_path)
    assert (info["Principals"], info["Critical Options"]) == ([], [])  # any user
    assert info["Extensions"] == ["permit-pty", "permit-user-rc"]


def test_valid_until_defaults_to_a_day_after_valid_after(admin, ca, tmp_path):
    body = _body(ca["id"], ssh_keygen(tmp_path, "ed25519"), valid_after="2030-06-01T00:00:00Z")
    cert = admin.post(PATH, json=body).json()
    assert cert["valid_until"] == "2030-06-02T00:00:00Z"


def test_extensions_given_replace_the_defaults(admin, ca, tmp_path):
    extensions = {"permit-port-forwarding": "", "permit-agent-forwarding": ""}
    body = _body(ca["id"], ssh_keygen(tmp_path, "ed25519"), extensions=extensions)
    cert = admin.post(PATH, json=body).json()
    assert cert["extensions"] == extensions
    info = ssh_certificate_listing(cert["certificate"], tmp_path)
    assert info["Extensions"] == ["permit-agent-forwarding", "permit-port-forwarding"]


@pytest.mark.parametrize(
    ("ca_body", "signature"),
    [
        ({"private_key_type": "ecdsa", "elliptic_curve": "p384"}, "ecdsa-sha2-nistp384"),
        ({"private_key_type": "rsa", "key_size": 2048}, "rsa-sha2-512"),
    ],
)
@pytest.mark.parametrize(
    ("key_type", "prefix"),
    [
        ("ed25519", "ssh-ed25519"),
        ("ecdsa", "ecdsa-sha2-nistp256"),
        ("rsa", "ssh-rsa"),
    ],
)
def test_every_ca_type_signs_every_key_type(admin, tmp_path, ca_body, signature, key_type, prefix):
    ca = admin.post(CAS, json=ca_body).json()
    cert = admin.post(PATH, json=_body(ca["id"], ssh_keygen(tmp_path, key_type))).json()
    assert cert["key_type"] == key_type
    assert cert["certificate"].startswith(f"{prefix}-cert-v01@openssh.com ")
    info = ssh_certificate_listing(cert["certificate"], tmp_path)
    assert info["Signing CA"].split()[1] == ssh_fingerprint(ca["public_key"], tmp_path)
    assert info["Signing CA"].endswith(f"(using {signature})")


@pytest.mark.parametrize(
    ("public_key", "code"),
    [
        ("", "ERR_INVALID_SSH_PUBLIC_KEY"),
        ("not a key", "ERR_INVALID_SSH_PUBLIC_KEY"),
        ("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIA6xCuXq9lVNGr", "ERR_INVALID_SSH_PUBLIC_KEY"),
        ("ssh-ed25519 " + "A" * 8000, "ERR_INVALID_SSH_PUBLIC_KEY"),
        (SK_KEY, "ERR_UNSUPPORTED_SSH_KEY_TYPE"),
        ("ssh-dss AAAAB3NzaC1kc3MAAACBAP", "ERR_UNSUPPORTED_SSH_KEY_TYPE"),
        ("ssh-ed25519-cert-v01@openssh.com AAAAIHNzaC1l", "ERR_UNSUPPORTED_SSH_KEY_TYPE"),
    ],
)
def test_rejected_public_keys(admin, ca, public_key, code):
    error = assert_error(admin.post(PATH, json=_body(ca["id"], public_key)), 400, code)
    assert error["details"]["field"] == "public_key"


@pytest.mark.parametrize(
    ("fields", "code", "field"),
    [
        ({"critical_options": {"verify-required": ""}}, "ERR_UNKNOWN_FIELD", None),
        ({"critical_options": {"source-address": "10.0.0.1/8"}}, "ERR_INVALID_FIELD", None),
        ({"critical_options": {"source-address": "10.0.0.0/8, ::1"}}, "ERR_INVALID_FIELD", None),
        ({"critical_options": {"source-address": "*.example"}}, "ERR_INVALID_FIELD", None),
        ({"critical_options": {"force-command": 1}}, "ERR_WRONG_TYPE", None),
        ({"critical_options": []}, "ERR_WRONG_TYPE", "critical_options"),
        ({"principals": ["alice", "alice"]}, "ERR_INVALID_FIELD", "principals"),
        ({"principals": ["a,b"]}, "ERR_INVALID_FIELD", "principals.0"),
        ({"principals": ["with space"]}, "ERR_INVALID_FIELD", "principals.0"),
        ({"principals": [""]}, "ERR_INVALID_FIELD", "principals.0"),
        ({"principals": [f"u{i}" for i in range(257)]}, "ERR_FIELD_TOO_LONG", "principals"),
        ({"principals": "alice"}, "ERR_WRONG_TYPE", "principals"),
        ({"extensions": {"bad name": ""}}, "ERR_INVALID_FIELD", "extensions.bad name"),
        ({"extensions": {"permit-pty": None}}, "ERR_WRONG_TYPE", "extensions.permit-pty"),
        ({"valid_after": "yesterday"}, "ERR_INVALID_FIELD", "valid_after"),
        ({"valid_until": "2026-11-21"}, "ERR_INVALID_FIELD", "valid_until"),
        ({"valid_after": 1700000000}, None, "valid_after"),
        (
            {"valid_after": "2030-01-01T00:00:00Z", "valid_until": "2030-01-01T00:00:00Z"},
            "ERR_INVALID_VALIDITY",
            "valid_until",
        ),
        (
            {"valid_after": "2030-01-02T00:00:00Z", "valid_until": "2030-01-01T00:00:00Z"},
            "ERR_INVALID_VALIDITY",
            "valid_until",
        ),
        ({"valid_until": "2020-01-01T00:00:00Z"}, "ERR_INVALID_VALIDITY", "valid_until"),
        ({"valid_after": "1969-12-31T23:59:59Z"}, "ERR_INVALID_VALIDITY", "valid_after"),
        ({"description": "é" * 128}, "ERR_FIELD_TOO_LONG", "description"),
        ({"metadata": "x" * 4097}, "ERR_FIELD_TOO_LONG", "metadata"),
        ({"certificate": "x"}, "ERR_UNKNOWN_FIELD", "certificate"),
    ],
)
def test_invalid_requests_write_nothing(admin, ca, tmp_path, fields, code, field):
    response = admin.post(PATH, json=_body(ca["id"], ssh_keygen(tmp_path, "ed25519"), **fields))
    assert response.status_code == 400, response.text
    error = response.json()
    if code is not None:
        assert_error(response, 400, code)
    if field is not None:
        assert error["details"]["field"] == field
    else:
        assert error["details"]["field"].startswith("critical_options")
    assert admin.get(PATH).json()["ssh_user_certificates"] == []


@pytest.mark.parametrize(
    ("body", "code", "field"),
    [
        ({"public_key": "ssh-ed25519 AAAA"}, "ERR_MISSING_FIELD", "ssh_certificate_authority_id"),
        (
            {"ssh_certificate_authority_id": "sshca_2pQcH4mZc6pNfXb8RhT0uKvAe2D"},
            "ERR_MISSING_FIELD",
            "public_key",
        ),
        (
            {"ssh_certificate_authority_id": "ca_2pQcH4mZc6pNfXb8RhT0uKvAe2D", "public_key": "x"},
            "ERR_INVALID_FIELD",
            "ssh_certificate_authority_id",
        ),
    ],
)
def test_required_fields(admin, body, code, field):
    assert assert_error(admin.post(PATH, json=body), 400, code)["details"]["field"] == field


def test_unknown_or_foreign_ca_is_a_missing_reference(admin, other, tmp_path):
    key = ssh_keygen(tmp_path, "ed25519")
    theirs = other.post(CAS, json={}).json()
    for ca_id in ("sshca_2pQcH4mZc6pNfXb8RhT0uKvAe2D", theirs["id"]):
        error = assert_error(
            admin.post(PATH, json=_body(ca_id, key)), 404, "ERR_REFERENCE_NOT_FOUND"
        )
        assert error["details"]["field"] == "ssh_certificate_authority_id"
    gone = admin.post(CAS, json={}).json()
    assert admin.delete(f"{CAS}/{gone['id']}").status_code == 204
    assert_error(admin.post(PATH, json=_body(gone["id"], key)), 404, "ERR_REFERENCE_NOT_FOUND")
    assert admin.get(PATH).json()["ssh_user_certificates"] == []


@pytest.mark.parametrize(
    ("body", "code", "field"),
    [
        ({"principals": ["root"]}, "ERR_UNKNOWN_FIELD", "principals"),
        ({"valid_until": "2099-01-01T00:00:00Z"}, "ERR_UNKNOWN_FIELD", "valid_until"),
        (
            {"ssh_certificate_authority_id": None},
            "ERR_UNKNOWN_FIELD",
            "ssh_certificate_authority_id",
        ),
        ({"description": "x" * 256}, "ERR_FIELD_TOO_LONG", "description"),
    ],
)
def test_update_changes_only_description_and_metadata(admin, ca, tmp_path, body, code, field):
    cert = admin.post(PATH, json=_body(ca["id"], ssh_keygen(tmp_path, "ed25519"))).json()
    url = f"{PATH}/{cert['id']}"
    assert assert_error(admin.patch(url, json=body), 400, code)["details"]["field"] == field
    assert admin.get(url).json() == cert
    assert admin.patch(url, json={"metadata": "m"}).json() == {**cert, "metadata": "m"}


def test_accounts_are_isolated(admin, other, ca, tmp_path):
    cert = admin.post(PATH, json=_body(ca["id"], ssh_keygen(tmp_path, "ed25519"))).json()
    url = f"{PATH}/{cert['id']}"
    assert_error(other.get(url), 404, "ERR_NOT_FOUND")
    assert_error(other.patch(url, json={"description": "theirs"}), 404, "ERR_NOT_FOUND")
    assert_error(other.delete(url), 404, "ERR_NOT_FOUND")
    assert other.get(PATH).json()["ssh_user_certificates"] == []
    assert admin.get(url).json() == cert


def test_list_pages(admin, ca, tmp_path):
    key = ssh_keygen(tmp_path, "ed25519")
    made = [admin.post(PATH, json=_body(ca["id"], key)).json()["id"] for _ in range(3)]
    first = admin.get(PATH, params={"limit": 2}).json()
    assert [c["id"] for c in first["ssh_user_certificates"]] == made[::-1][:2]
    second = admin.get(first["next_page_uri"].removeprefix("http://testserver")).json()
    assert [c["id"] for c in second["ssh_user_certificates"]] == [made[0]]
    assert second["next_page_uri"] is None
    assert_error(
        admin.get(PATH, params={"beforeId": made[0].replace("sucrt_", "sshca_")}),
        400,
        "ERR_INVALID_PARAMETER",
    )


def test_a_key_wrapped_under_another_kek_is_a_server_error():
    ca = SshCertificateAuthority.new(
        id="sshca_2pQcH4mZc6pNfXb8RhT0uKvAe2D",
        account_id="acct_x",
        public_key="",
        key_type="ed25519",
        wrapped_private_key=keys.wrap(bytes(32), b"key", b"sshca_2pQcH4mZc6pNfXb8RhT0uKvAe2D"),
    )
    with pytest.raises(ApiError) as caught:
        ssh_signing._private_key(ca)
    assert caught.value.code is Code.INTERNAL
    assert "TUNNELGW_KEY_ENCRYPTION_KEY" in caught.value.msg
