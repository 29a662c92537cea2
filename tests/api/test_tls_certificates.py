"""TLS certificates: /tls_certificates (related-resources.md): upload of a chain and its key,
the fields derived from the leaf, the private key wrapped at rest and never shown, the
certificates certificate management issues, and the in-use rule on delete."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import dsa, ec
from cryptography.x509.oid import NameOID

from tests.factories import (
    assert_error,
    database_dump,
    in_dump,
    tls_upload,
    x509_certificate,
)
from tunnelgw.core.spec import load as load_spec
from tunnelgw.crypto import keys, tls
from tunnelgw.models import TlsCertificate

SPEC = Path(__file__).resolve().parents[2] / "openapi.yaml"
PATH = "/tls_certificates"
FIELDS = {
    "id",
    "uri",
    "created_at",
    "description",
    "metadata",
    "certificate_pem",
    "subject_common_name",
    "subject_alternative_names",
    "issued_at",
    "not_before",
    "not_after",
    "key_usages",
    "extended_key_usages",
    "private_key_type",
    "issuer_common_name",
    "serial_number",
    "subject_organization",
    "subject_organizational_unit",
    "subject_locality",
    "subject_province",
    "subject_country",
}


def _body(upload, **extra):  # type: ignore[no-untyped-def]
    return {"certificate_pem": upload.chain_pem, "private_key_pem": upload.key_pem, **extra}


def _row(factory, cert_id: str) -> TlsCertificate:  # type: ignore[no-untyped-def]
    async def fetch(unit):  # type: ignore[no-untyped-def]
        return await unit.get(TlsCertificate, cert_id)

    return factory.query(fetch)  # type: ignore[no-any-return]


def test_create_get_list_update_delete(admin):
    upload = tls_upload(
        subject=(
            (NameOID.COUNTRY_NAME, "DE"),
            (NameOID.STATE_OR_PROVINCE_NAME, "Berlin"),
            (NameOID.LOCALITY_NAME, "Berlin"),
            (NameOID.ORGANIZATION_NAME, "Example Corp"),
            (NameOID.ORGANIZATIONAL_UNIT_NAME, "Web"),
            (NameOID.COMMON_NAME, "app.example.com"),
        ),
        dns_names=("app.example.com", "*.app.example.com"),
        ips=("192.0.2.7", "2001:db8::1"),
        serial=0x0ABC,
        not_before=datetime(2026, 2, 3, 4, 5, 6, tzinfo=UTC),
    )
    created = admin.post(PATH, json=_body(upload, description="app", metadata='{"a": 1}'))
    assert created.status_code == 201, created.text
    cert = created.json()
    assert set(cert) == FIELDS
    assert cert["id"].startswith("cert_")
    assert cert["uri"] == f"http://testserver{PATH}/{cert['id']}"
    assert cert["certificate_pem"] == upload.chain_pem  # leaf and intermediate, re-encoded
    assert cert["certificate_pem"].count("BEGIN CERTIFICATE") == 2
    assert {k: cert[k] for k in FIELDS - {"id", "uri", "created_at", "certificate_pem"}} == {
        "description": "app",
        "metadata": '{"a": 1}',
        "subject_common_name": "app.example.com",
        "subject_alternative_names": {
            "dns_names": ["app.example.com", "*.app.example.com"],
            "ips": ["192.0.2.7", "2001:db8::1"],
        },
        "issued_at": None,
        "not_before": "2026-02-03T04:05:06Z",
        "not_after": "2036-01-01T00:00:00Z",
        "key_usages": ["digital_signature"],
        "extended_key_usages": ["server_auth"],
        "private_key_type": "ecdsa",
        "issuer_common_name": "Test Intermediate 0",
        "serial_number": "abc",
        "subject_organization": "Example Corp",
        "subject_organizational_unit": "Web",
        "subject_locality": "Berlin",
        "subject_province": "Berlin",
        "subject_country": "DE",
    }
    assert "PRIVATE KEY" not in created.text

    url = f"{PATH}/{cert['id']}"
    assert admin.get(url).json() == cert
    assert cert in admin.get(PATH).json()["tls_certificates"]
    updated = admin.patch(url, json={"description": "renamed", "metadata": ""}).json()
    assert updated == {**cert, "description": "renamed", "metadata": ""}
    assert admin.patch(url, json={}).json() == updated
    assert admin.delete(url).status_code == 204
    assert_error(admin.get(url), 404, "ERR_NOT_FOUND")
    assert_error(admin.delete(url), 404, "ERR_NOT_FOUND")


@pytest.mark.parametrize(("key_type", "intermediates"), [("rsa", 0), ("ed25519", 2)])
def test_key_types_and_chain_lengths(admin, key_type, intermediates):
    upload = tls_upload(key_type=key_type, intermediates=intermediates, dns_names=())
    cert = admin.post(PATH, json=_body(upload)).json()
    assert cert["private_key_type"] == key_type
    assert cert["certificate_pem"].count("BEGIN CERTIFICATE") == intermediates + 1
    assert cert["subject_alternative_names"] == {"dns_names": [], "ips": []}
    expected_issuer = f"Test Intermediate {intermediates - 1}" if intermediates else "Test Root CA"
    assert cert["issuer_common_name"] == expected_issuer


def test_what_the_python_client_sends_is_accepted(admin):
    """`create(certificate_pem, private_key_pem)` sends the empty description and metadata."""
    upload = tls_upload()
    cert = admin.post(PATH, json=_body(upload, description="", metadata="")).json()
    assert (cert["description"], cert["metadata"]) == ("", "")


def test_the_private_key_is_stored_wrapped_under_the_kek(admin, factory):
    upload = tls_upload()
    cert = admin.post(PATH, json=_body(upload)).json()
    row = _row(factory, cert["id"])
    assert row.wrapped_private_key is not None
    der = keys.unwrap(keys.current(), row.wrapped_private_key, cert["id"].encode())
    key = serialization.load_der_private_key(der, password=None)
    assert key.private_numbers() == upload.key.private_numbers()  # type: ignore[union-attr]
    # The row id is the associated data: the blob does not decrypt as another row's.
    other = admin.post(PATH, json=_body(tls_upload())).json()
    with pytest.raises(keys.UnwrapError):
        keys.unwrap(keys.current(), row.wrapped_private_key, other["id"].encode())
    with pytest.raises(keys.UnwrapError):
        keys.unwrap(bytes(32), row.wrapped_private_key, cert["id"].encode())


def test_database_holds_no_private_key_in_the_clear(admin, settings):
    uploads = [tls_upload(key_type=kind) for kind in ("ecdsa", "rsa", "ed25519")]
    made = [admin.post(PATH, json=_body(upload)).json() for upload in uploads]
    dump = database_dump(settings)
    assert b"PRIVATE KEY" not in dump
    for upload, cert in zip(uploads, made, strict=True):
        assert cert["serial_number"].encode() in dump  # the right database, and readable
        der = upload.key.private_bytes(
            serialization.Encoding.DER,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
        assert not in_dump(der, dump)
        for secret in _secrets(upload.key):
            assert not in_dump(secret, dump)


def _secrets(key) -> list[bytes]:  # type: ignore[no-untyped-def]
    """The raw private values of a key, as they would appear if stored unencrypted."""
    if isinstance(key, ec.EllipticCurvePrivateKey):
        value = key.private_numbers().private_value
        return [value.to_bytes((value.bit_length() + 7) // 8, "big")]
    if hasattr(key, "private_numbers"):  # RSA
        numbers = key.private_numbers()
        return [n.to_bytes((n.bit_length() + 7) // 8, "big") for n in (numbers.d, numbers.p)]
    return [key.private_bytes_raw()]


def _rules() -> list[tuple[str, dict[str, str], str, str]]:
    """(name, body, code, field) of each rule of an upload."""
    good, other = tls_upload(), tls_upload()
    leaf, intermediate = good.chain_pem.split("-----END CERTIFICATE-----\n")[:2]
    leaf += "-----END CERTIFICATE-----\n"
    intermediate += "-----END CERTIFICATE-----\n"
    encrypted = good.key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(b"secret"),
    ).decode()
    dsa_leaf_key = dsa.generate_private_key(key_size=2048)
    dsa_key_pem = dsa_leaf_key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    key = good.key_pem
    return [
        ("not pem", {"certificate_pem": "hello", "private_key_pem": key}, "INVALID_PEM", "c"),
        (
            "key as chain",
            {"certificate_pem": key, "private_key_pem": key},
            "NOT_A_CERTIFICATE",
            "c",
        ),
        (
            "garbage block",
            {
                "certificate_pem": "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
                "private_key_pem": key,
            },
            "INVALID_CERTIFICATE",
            "c",
        ),
        (
            "out of order",
            {"certificate_pem": intermediate + leaf, "private_key_pem": key},
            "CHAIN_OUT_OF_ORDER",
            "c",
        ),
        (
            "eleven certificates",
            {"certificate_pem": leaf + intermediate * 10, "private_key_pem": key},
            "FIELD_TOO_LONG",
            "c",
        ),
        (
            "encrypted key",
            {"certificate_pem": good.chain_pem, "private_key_pem": encrypted},
            "ENCRYPTED_PRIVATE_KEY",
            "k",
        ),
        (
            "chain as key",
            {"certificate_pem": good.chain_pem, "private_key_pem": good.chain_pem},
            "INVALID_PRIVATE_KEY",
            "k",
        ),
        (
            "dsa key",
            {"certificate_pem": good.chain_pem, "private_key_pem": dsa_key_pem},
            "UNSUPPORTED_KEY_TYPE",
            "k",
        ),
        (
            "another leaf's key",
            {"certificate_pem": good.chain_pem, "private_key_pem": other.key_pem},
            "PRIVATE_KEY_MISMATCH",
            "k",
        ),
        (
            "key too long",
            {"certificate_pem": good.chain_pem, "private_key_pem": "x" * 16385},
            "FIELD_TOO_LONG",
            "k",
        ),
        ("no key", {"certificate_pem": good.chain_pem}, "MISSING_FIELD", "k"),
        ("no chain", {"private_key_pem": key}, "MISSING_FIELD", "c"),
        (
            "a field no client sends",
            {**_body(good), "certificate_id": "cert_x"},
            "UNKNOWN_FIELD",
            "certificate_id",
        ),
        (
            "description over 255 bytes",
            {**_body(good), "description": "é" * 128},
            "FIELD_TOO_LONG",
            "description",
        ),
    ]


FIELD_NAMES = {"c": "certificate_pem", "k": "private_key_pem"}


def test_every_rule_has_its_code_and_writes_nothing(admin):
    for name, body, code, field in _rules():
        error = assert_error(admin.post(PATH, json=body), 400, f"ERR_{code}")
        assert error["details"]["field"] == FIELD_NAMES.get(field, field), name
    assert admin.get(PATH).json()["tls_certificates"] == []


def test_the_spec_limits_are_the_crypto_limits():
    """The whole-field limits are declared in the spec (validated before any parsing); a
    65537-character chain does not fit the test server's 64 KiB body limit."""
    schema = load_spec()["components"]["schemas"]["TlsCertificateCreate"]
    props = schema["properties"]
    assert props["certificate_pem"]["maxLength"] == tls.MAX_CHAIN_CHARS == 65536
    assert props["private_key_pem"]["maxLength"] == tls.MAX_KEY_CHARS == 16384
    assert tls.MAX_CHAIN_CERTIFICATES == 10


def test_expired_certificates_are_accepted(admin):
    upload = tls_upload(
        not_before=datetime(2001, 1, 1, tzinfo=UTC), not_after=datetime(2002, 1, 1, tzinfo=UTC)
    )
    cert = admin.post(PATH, json=_body(upload)).json()
    assert cert["not_after"] == "2002-01-01T00:00:00Z"


@pytest.mark.parametrize(
    ("body", "code", "field"),
    [
        ({"certificate_pem": "x"}, "ERR_UNKNOWN_FIELD", "certificate_pem"),
        ({"private_key_pem": "x"}, "ERR_UNKNOWN_FIELD", "private_key_pem"),
        ({"metadata": "x" * 4097}, "ERR_FIELD_TOO_LONG", "metadata"),
        ({"description": 7}, "ERR_WRONG_TYPE", "description"),
    ],
)
def test_update_changes_only_description_and_metadata(admin, body, code, field):
    cert = admin.post(PATH, json=_body(tls_upload())).json()
    error = assert_error(admin.patch(f"{PATH}/{cert['id']}", json=body), 400, code)
    assert error["details"]["field"] == field
    assert admin.get(f"{PATH}/{cert['id']}").json() == cert


def _domain(admin, **body):  # type: ignore[no-untyped-def]
    made = admin.post(
        "/reserved_domains", json={"domain": f"d{uuid.uuid4().hex[:12]}.example.com", **body}
    )
    assert made.status_code == 201, made.text
    return made.json()


def test_a_certificate_a_reserved_domain_uses_cannot_be_deleted(admin):
    cert = admin.post(PATH, json=_body(tls_upload())).json()
    url = f"{PATH}/{cert['id']}"
    domain = _domain(admin, certificate_id=cert["id"])
    assert domain["certificate"] == {"id": cert["id"], "uri": cert["uri"]}
    assert admin.get(domain["certificate"]["uri"].removeprefix("http://testserver")).json() == cert
    error = assert_error(admin.delete(url), 409, "ERR_CERTIFICATE_IN_USE")
    assert error["details"]["id"] == cert["id"]
    # attached by PATCH as well
    assert admin.delete(f"/reserved_domains/{domain['id']}/certificate").status_code == 204
    other = _domain(admin)
    patched = admin.patch(f"/reserved_domains/{other['id']}", json={"certificate_id": cert["id"]})
    assert patched.status_code == 200
    assert_error(admin.delete(url), 409, "ERR_CERTIFICATE_IN_USE")
    # another certificate attached instead: free again
    replacement = admin.post(PATH, json=_body(tls_upload())).json()
    admin.patch(f"/reserved_domains/{other['id']}", json={"certificate_id": replacement["id"]})
    assert admin.delete(url).status_code == 204


def test_issued_certificates_are_listed_with_their_fields(admin, factory):
    name = f"d{uuid.uuid4().hex[:12]}.example.com"
    domain = admin.post(
        "/reserved_domains",
        json={"domain": name, "certificate_management_policy": {"private_key_type": "ecdsa"}},
    ).json()
    settled = admin.get(f"/reserved_domains/{domain['id']}").json()  # issue delay 0 s
    cert_ref = settled["certificate"]
    issued = admin.get(f"{PATH}/{cert_ref['id']}").json()
    assert issued["uri"] == cert_ref["uri"]
    listed = {c["id"]: c for c in admin.get(PATH).json()["tls_certificates"]}
    assert listed[cert_ref["id"]] == issued
    job = domain["certificate_management_status"]["provisioning_job"]
    assert issued["issued_at"] == issued["not_before"] == job["started_at"]
    assert issued["subject_alternative_names"] == {"dns_names": [name], "ips": []}
    assert issued["subject_common_name"] == name
    assert issued["private_key_type"] == "ecdsa"
    assert issued["extended_key_usages"] == ["server_auth"]
    leaf = x509.load_pem_x509_certificate(issued["certificate_pem"].encode())
    assert issued["serial_number"] == format(leaf.serial_number, "x")
    assert (
        issued["issuer_common_name"]
        == leaf.issuer.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value
    )
    assert name in issued["description"]
    row = _row(factory, cert_ref["id"])
    assert keys.unwrap(keys.current(), row.wrapped_private_key, cert_ref["id"].encode())
    # in use by its domain until the policy and the certificate are detached
    assert_error(admin.delete(f"{PATH}/{cert_ref['id']}"), 409, "ERR_CERTIFICATE_IN_USE")
    url = f"/reserved_domains/{domain['id']}"
    assert admin.delete(f"{url}/certificate_management_policy").status_code == 204
    assert admin.delete(f"{url}/certificate").status_code == 204
    assert admin.delete(f"{PATH}/{cert_ref['id']}").status_code == 204


def test_list_pages_newest_first(admin):
    made = [admin.post(PATH, json=_body(tls_upload())).json()["id"] for _ in range(3)]
    first = admin.get(PATH, params={"limit": 2}).json()
    assert [c["id"] for c in first["tls_certificates"]] == made[::-1][:2]
    assert first["next_page_uri"] == (f"http://testserver{PATH}?limit=2&before_id={made[1]}")
    rest = admin.get(first["next_page_uri"].removeprefix("http://testserver")).json()
    assert [c["id"] for c in rest["tls_certificates"]] == [made[0]]
    assert rest["next_page_uri"] is None
    assert_error(
        admin.get(PATH, params={"before_id": "ak_" + "0" * 27}), 400, "ERR_INVALID_PARAMETER"
    )


def test_other_accounts_see_nothing(admin, other):
    cert = admin.post(PATH, json=_body(tls_upload())).json()
    url = f"{PATH}/{cert['id']}"
    assert_error(other.get(url), 404, "ERR_NOT_FOUND")
    assert_error(other.patch(url, json={"description": "x"}), 404, "ERR_NOT_FOUND")
    assert_error(other.delete(url), 404, "ERR_NOT_FOUND")
    assert other.get(PATH).json()["tls_certificates"] == []
    error = assert_error(
        other.post(
            "/reserved_domains",
            json={"domain": f"d{uuid.uuid4().hex[:12]}.example.com", "certificate_id": cert["id"]},
        ),
        404,
        "ERR_REFERENCE_NOT_FOUND",
    )
    assert error["details"]["field"] == "certificate_id"
    assert admin.get(url).json() == cert


def test_a_fixture_certificate_without_a_key_is_served(admin, factory):
    """Rows the fixture files write (a certificate, no key) show the same fields."""
    from tunnelgw.models.tls_certificate import certificate_columns

    pem = x509_certificate(ca=False, common_names=("fixture.example.com",))
    fields = tls.certificate_fields(x509.load_pem_x509_certificate(pem.encode()))
    row = factory.row(
        TlsCertificate, admin.creds.account_id, certificate_pem=pem, **certificate_columns(fields)
    )
    shown = admin.get(f"{PATH}/{row.id}").json()
    assert (shown["subject_common_name"], shown["issued_at"]) == ("fixture.example.com", None)
