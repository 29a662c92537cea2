"""SSH host certificates: /ssh_host_certificates. Issued certificates are read back with
`ssh-keygen -L` (which checks the CA's signature), and an OpenSSH client trusts them through a
known_hosts `@cert-authority` line when a real sshd presents them (tests/sshd.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.factories import assert_error, ssh_certificate_listing, ssh_fingerprint, ssh_keygen
from tests.sshd import client_trusts_host, sshd_binary

PATH = "/ssh_host_certificates"
CAS = "/ssh_certificate_authorities"
USER_CERTS = "/ssh_user_certificates"


@pytest.fixture
def ca(admin):  # type: ignore[no-untyped-def]
    return admin.post(CAS, json={"description": "host ca"}).json()


def _body(ca_id: str, public_key: str, **fields):  # type: ignore[no-untyped-def]
    return {"ssh_certificate_authority_id": ca_id, "public_key": public_key, **fields}


def test_create_get_list_update_delete(admin, ca, tmp_path):
    host_key = ssh_keygen(tmp_path, "ed25519")
    created = admin.post(
        PATH,
        json=_body(
            ca["id"],
            host_key,
            principals=[
                "Build-7.Example.com",
                "10.2.42.9",
                "*.build.example.com",
                "2001:DB8::1",
                "build-7.example.com",  # the first one again, once lower-cased: kept once
            ],
            valid_after="2026-11-21T10:11:14+01:00",
            description="build 7",
            metadata='{"rack": 2}',
        ),
    )
    assert created.status_code == 201, created.text
    cert = created.json()
    assert cert["id"].startswith("shcrt_")
    assert cert["uri"] == f"http://testserver{PATH}/{cert['id']}"
    assert cert["public_key"] == " ".join(host_key.split()[:2])
    assert (cert["key_type"], cert["ssh_certificate_authority_id"]) == ("ed25519", ca["id"])
    principals = ["build-7.example.com", "10.2.42.9", "*.build.example.com", "2001:db8::1"]
    assert cert["principals"] == principals
    # The platform's default: a year (365 days) after valid_after.
    assert (cert["valid_after"], cert["valid_until"]) == (
        "2026-11-21T09:11:14Z",
        "2027-11-21T09:11:14Z",
    )
    assert cert["certificate"].startswith("ssh-ed25519-cert-v01@openssh.com AAAA")

    info = ssh_certificate_listing(cert["certificate"], tmp_path)
    assert info["Type"] == "ssh-ed25519-cert-v01@openssh.com host certificate"
    assert info["Signing CA"].split()[1] == ssh_fingerprint(ca["public_key"], tmp_path)
    assert info["Public key"].split()[1] == ssh_fingerprint(host_key, tmp_path)
    assert info["Key ID"] == f'"{cert["id"]}"'
    assert info["Valid"] == "from 2026-11-21T09:11:14 to 2027-11-21T09:11:14"
    assert info["Principals"] == principals
    assert (info["Critical Options"], info["Extensions"]) == ([], [])  # "(none)"

    url = f"{PATH}/{cert['id']}"
    assert admin.get(url).json() == cert
    assert cert in admin.get(PATH).json()["ssh_host_certificates"]
    updated = admin.patch(url, json={"description": "build 7 (rack 3)"}).json()
    assert updated == {**cert, "description": "build 7 (rack 3)"}
    assert admin.delete(url).status_code == 204
    assert_error(admin.get(url), 404, "ERR_NOT_FOUND")


@pytest.mark.parametrize(
    "unset",
    [{}, {"principals": []}, {"principals": None, "valid_after": "", "valid_until": None}],
)
def test_defaults(admin, ca, tmp_path, unset):
    before = datetime.now(UTC).replace(microsecond=0)
    cert = admin.post(PATH, json=_body(ca["id"], ssh_keygen(tmp_path, "ecdsa"), **unset))
    assert cert.status_code == 201, cert.text
    cert = cert.json()
    after = datetime.fromisoformat(cert["valid_after"])
    assert before <= after <= datetime.now(UTC)
    assert datetime.fromisoformat(cert["valid_until"]) - after == timedelta(days=365)
    assert cert["principals"] == []
    info = ssh_certificate_listing(cert["certificate"], tmp_path)
    assert info["Type"].endswith(" host certificate")
    assert info["Principals"] == []  # "(none)": any host


def test_user_certificates_are_still_user_certificates(admin, ca, tmp_path):
    cert = admin.post(USER_CERTS, json=_body(ca["id"], ssh_keygen(tmp_path, "ed25519"))).json()
    info = ssh_certificate_listing(cert["certificate"], tmp_path)
    assert info["Type"] == "ssh-ed25519-cert-v01@openssh.com user certificate"


@pytest.mark.parametrize(
    ("fields", "code", "field"),
    [
        ({"principals": ["host_1.example.com"]}, "ERR_INVALID_HOST_PRINCIPAL", "principals.0"),
        ({"principals": ["ok.example", "a b"]}, "ERR_INVALID_HOST_PRINCIPAL", "principals.1"),
        ({"principals": ["-lead.example"]}, "ERR_INVALID_HOST_PRINCIPAL", "principals.0"),
        ({"principals": ["a..b"]}, "ERR_INVALID_HOST_PRINCIPAL", "principals.0"),
        ({"principals": ["*"]}, "ERR_INVALID_HOST_PRINCIPAL", "principals.0"),
        ({"principals": ["10.0.0"]}, "ERR_INVALID_HOST_PRINCIPAL", "principals.0"),
        ({"principals": ["fe80::1%eth0"]}, "ERR_INVALID_HOST_PRINCIPAL", "principals.0"),
        ({"principals": ["a" * 64 + ".example"]}, "ERR_INVALID_HOST_PRINCIPAL", "principals.0"),
        ({"principals": [""]}, "ERR_INVALID_FIELD", "principals.0"),
        ({"principals": ["x" * 254]}, "ERR_FIELD_TOO_LONG", "principals.0"),
        ({"principals": "host.example"}, "ERR_WRONG_TYPE", "principals"),
        ({"principals": [1]}, "ERR_WRONG_TYPE", "principals.0"),
        ({"critical_options": {}}, "ERR_UNKNOWN_FIELD", "critical_options"),
        ({"extensions": {}}, "ERR_UNKNOWN_FIELD", "extensions"),
        ({"valid_after": "yesterday"}, "ERR_INVALID_FIELD", "valid_after"),
        ({"valid_until": "2020-01-01T00:00:00Z"}, "ERR_INVALID_VALIDITY", "valid_until"),
        ({"valid_after": "9999-12-31T23:59:59Z"}, "ERR_INVALID_VALIDITY", "valid_until"),
        ({"description": "é" * 128}, "ERR_FIELD_TOO_LONG", "description"),
        ({"metadata": "x" * 4097}, "ERR_FIELD_TOO_LONG", "metadata"),
        ({"public_key": "ssh-dss AAAAB3NzaC1kc3MAAACBAP"}, "ERR_UNSUPPORTED_SSH_KEY_TYPE", None),
        ({"public_key": "not a key"}, "ERR_INVALID_SSH_PUBLIC_KEY", "public_key"),
    ],
)
def test_invalid_requests_write_nothing(admin, ca, tmp_path, fields, code, field):
    body = {**_body(ca["id"], ssh_keygen(tmp_path, "ed25519")), **fields}
    error = assert_error(admin.post(PATH, json=body), 400, code)
    assert error["details"]["field"] == (field or "public_key")
    assert admin.get(PATH).json()["ssh_host_certificates"] == []


def test_unknown_or_foreign_ca_is_a_missing_reference(admin, other, tmp_path):
    key = ssh_keygen(tmp_path, "ed25519")
    theirs = other.post(CAS, json={}).json()
    for ca_id in ("sshca_2pQcH4mZc6pNfXb8RhT0uKvAe2D", theirs["id"]):
        error = assert_error(
            admin.post(PATH, json=_body(ca_id, key)), 404, "ERR_REFERENCE_NOT_FOUND"
        )
        assert error["details"]["field"] == "ssh_certificate_authority_id"
    assert admin.get(PATH).json()["ssh_host_certificates"] == []


def test_a_ca_with_unexpired_host_certificates_cannot_be_deleted(admin, ca, tmp_path):
    cert = admin.post(PATH, json=_body(ca["id"], ssh_keygen(tmp_path, "ed25519"))).json()
    assert_error(admin.delete(f"{CAS}/{ca['id']}"), 409, "ERR_SSH_CA_IN_USE")
    expired = _body(
        ca["id"],
        ssh_keygen(tmp_path, "ed25519"),
        valid_after="2020-01-01T00:00:00Z",
        valid_until="2020-01-02T00:00:00Z",
    )
    assert admin.post(PATH, json=expired).status_code == 201
    assert admin.delete(f"{PATH}/{cert['id']}").status_code == 204
    assert admin.delete(f"{CAS}/{ca['id']}").status_code == 204  # only an expired one left


@pytest.mark.parametrize(
    ("body", "code", "field"),
    [
        ({"principals": ["h.example"]}, "ERR_UNKNOWN_FIELD", "principals"),
        ({"valid_until": "2099-01-01T00:00:00Z"}, "ERR_UNKNOWN_FIELD", "valid_until"),
        ({"description": "x" * 256}, "ERR_FIELD_TOO_LONG", "description"),
        ({"metadata": 5}, "ERR_WRONG_TYPE", "metadata"),
    ],
)
def test_update_changes_only_description_and_metadata(admin, ca, tmp_path, body, code, field):
    cert = admin.post(PATH, json=_body(ca["id"], ssh_keygen(tmp_path, "ed25519"))).json()
    url = f"{PATH}/{cert['id']}"
    assert assert_error(admin.patch(url, json=body), 400, code)["details"]["field"] == field
    assert admin.get(url).json() == cert


def test_accounts_are_isolated(admin, other, ca, tmp_path):
    cert = admin.post(PATH, json=_body(ca["id"], ssh_keygen(tmp_path, "ed25519"))).json()
    url = f"{PATH}/{cert['id']}"
    assert_error(other.get(url), 404, "ERR_NOT_FOUND")
    assert_error(other.patch(url, json={"description": "theirs"}), 404, "ERR_NOT_FOUND")
    assert_error(other.delete(url), 404, "ERR_NOT_FOUND")
    assert other.get(PATH).json()["ssh_host_certificates"] == []
    assert admin.get(url).json() == cert


def test_list_pages_and_filters(admin, ca, tmp_path):
    key = ssh_keygen(tmp_path, "rsa", 2048)
    made = [
        admin.post(PATH, json=_body(ca["id"], key, principals=[f"h{i}.example"])).json()["id"]
        for i in range(3)
    ]
    first = admin.get(PATH, params={"limit": 2}).json()
    assert [c["id"] for c in first["ssh_host_certificates"]] == made[::-1][:2]
    second = admin.get(first["next_page_uri"].removeprefix("http://testserver")).json()
    assert [c["id"] for c in second["ssh_host_certificates"]] == [made[0]]
    assert second["next_page_uri"] is None
    found = admin.get(PATH, params={"filter": '"h1.example" in obj.principals'}).json()
    assert [c["id"] for c in found["ssh_host_certificates"]] == [made[1]]
    assert_error(
        admin.get(PATH, params={"before_id": made[0].replace("shcrt_", "sucrt_")}),
        400,
        "ERR_INVALID_PARAMETER",
    )


@pytest.mark.skipif(sshd_binary() is None, reason="needs OpenSSH's sshd (Debian: openssh-server)")
@pytest.mark.parametrize("ca_body", [{}, {"private_key_type": "rsa", "key_size": 2048}])
def test_an_ssh_client_trusts_the_certificate_through_its_ca(admin, tmp_path, ca_body):
    """A real sshd presents the host certificate; `ssh` with only a known_hosts
    `@cert-authority` line for the CA accepts the server under a principal's name, and
    refuses it under another name or with another CA's line."""
    ca = admin.post(CAS, json=ca_body).json()
    stranger = admin.post(CAS, json={}).json()
    key_file = Path(tmp_path / "host_ed25519")
    host_key = ssh_keygen(tmp_path, "ed25519")
    generated = next(tmp_path.glob("id_ed25519_*.pub"))
    generated.with_suffix("").rename(key_file)
    body = _body(ca["id"], host_key, principals=["build-7.example.com", "127.0.0.1"])
    cert = admin.post(PATH, json=body).json()
    trusted = client_trusts_host(tmp_path, key_file, cert["certificate"], ca["public_key"])
    assert trusted("build-7.example.com") is True
    assert trusted("127.0.0.1") is True
    assert trusted("other.example.com") is False  # not a principal
    untrusted = client_trusts_host(tmp_path, key_file, cert["certificate"], stranger["public_key"])
    assert untrusted("build-7.example.com") is False
