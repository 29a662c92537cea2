"""Certificate authorities: /certificate_authorities (spec 4.4)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, ObjectIdentifier

from tests.factories import assert_error, x509_certificate
from tunnelgw.core.timefmt import rfc3339

PATH = "/certificate_authorities"


def test_create_get_list_update_delete(admin):
    pem = x509_certificate(
        common_names=("Corp Root",),
        key_usages=("digital_signature", "key_cert_sign", "crl_sign"),
        extended_key_usages=(ExtendedKeyUsageOID.CLIENT_AUTH, ObjectIdentifier("1.2.3.4.5")),
        not_before=datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC),
        not_after=datetime(2036, 1, 2, 3, 4, 5, tzinfo=UTC),
    )
    created = admin.post(PATH, json={"ca_pem": pem, "description": "root", "metadata": "{}"})
    assert created.status_code == 201, created.text
    ca = created.json()
    assert ca["id"].startswith("ca_")
    assert ca["uri"] == f"http://testserver{PATH}/{ca['id']}"
    assert ca["ca_pem"] == pem
    assert ca["ca_pem"].endswith("\n")
    assert ca["subject_common_name"] == "Corp Root"
    assert (ca["not_before"], ca["not_after"]) == ("2026-01-02T03:04:05Z", "2036-01-02T03:04:05Z")
    assert ca["key_usages"] == ["digital_signature", "key_cert_sign", "crl_sign"]
    assert ca["extended_key_usages"] == ["client_auth", "1.2.3.4.5"]
    assert (ca["description"], ca["metadata"]) == ("root", "{}")

    url = f"{PATH}/{ca['id']}"
    assert admin.get(url).json() == ca
    assert ca in admin.get(PATH).json()["certificate_authorities"]

    updated = admin.patch(url, json={"description": "renamed", "metadata": None}).json()
    assert updated == {**ca, "description": "renamed"}

    assert admin.delete(url).status_code == 204
    assert_error(admin.get(url), 404, "ERR_NOT_FOUND")
    assert_error(admin.delete(url), 404, "ERR_NOT_FOUND")


def test_pem_is_normalised_and_ends_with_a_newline(admin):
    pem = x509_certificate()
    messy = "Issuer: CN=Test CA\r\n" + pem.strip().replace("\n", "\r\n")
    created = admin.post(PATH, json={"ca_pem": messy}).json()
    assert created["ca_pem"] == pem
    assert created["key_usages"] == ["key_cert_sign", "crl_sign"]
    assert created["extended_key_usages"] == []
    assert (created["description"], created["metadata"]) == ("", "")


def test_expired_ca_is_accepted_with_its_dates(admin):
    pem = x509_certificate(
        not_before=datetime(2000, 1, 1, tzinfo=UTC), not_after=datetime(2001, 1, 1, tzinfo=UTC)
    )
    created = admin.post(PATH, json={"ca_pem": pem})
    assert created.status_code == 201
    assert created.json()["not_after"] == "2001-01-01T00:00:00Z"


def test_far_future_and_early_dates_keep_four_digit_years():
    assert rfc3339(datetime(999, 1, 2, 3, 4, 5, tzinfo=UTC)) == "0999-01-02T03:04:05Z"
    assert rfc3339(datetime(9999, 12, 31, 23, 59, 59)) == "9999-12-31T23:59:59Z"


def _private_key_pem() -> str:
    return (
        ec.generate_private_key(ec.SECP256R1())
        .private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
        .decode()
    )


GARBAGE = "-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----\n"


@pytest.mark.parametrize(
    ("make", "code"),
    [
        (lambda: "", "ERR_INVALID_PEM"),
        (lambda: "hello, world", "ERR_INVALID_PEM"),
        (lambda: "-----BEGIN CERTIFICATE-----\nMIIB\n", "ERR_INVALID_PEM"),
        (_private_key_pem, "ERR_NOT_A_CERTIFICATE"),
        (lambda: x509_certificate() + _private_key_pem(), "ERR_NOT_A_CERTIFICATE"),
        (lambda: GARBAGE, "ERR_INVALID_CERTIFICATE"),
        (lambda: GARBAGE.replace("bm90", "!!!!"), "ERR_INVALID_CERTIFICATE"),
        (lambda: x509_certificate() + x509_certificate(), "ERR_MULTIPLE_CERTIFICATES"),
        (lambda: x509_certificate(ca=False), "ERR_NOT_A_CA"),
        (lambda: x509_certificate(ca=None), "ERR_NOT_A_CA"),
    ],
)
def test_rejected_pems(admin, make, code):
    before = admin.get(PATH).json()["certificate_authorities"]
    error = assert_error(admin.post(PATH, json={"ca_pem": make()}), 400, code)
    assert error["details"]["field"] == "ca_pem"
    assert admin.get(PATH).json()["certificate_authorities"] == before


@pytest.mark.parametrize(
    ("body", "code", "field"),
    [
        ({}, "ERR_MISSING_FIELD", "ca_pem"),
        ({"ca_pem": None}, "ERR_WRONG_TYPE", "ca_pem"),
        ({"ca_pem": 1}, "ERR_WRONG_TYPE", "ca_pem"),
        ({"ca_pem": "x" * 32769}, "ERR_FIELD_TOO_LONG", "ca_pem"),
        ({"ca_pem": "é" * 16385}, "ERR_FIELD_TOO_LONG", "ca_pem"),
        ({"ca_pem": "x", "description": "é" * 128}, "ERR_FIELD_TOO_LONG", "description"),
        ({"ca_pem": "x", "metadata": "x" * 4097}, "ERR_FIELD_TOO_LONG", "metadata"),
        ({"ca_pem": "x", "subject_common_name": "x"}, "ERR_UNKNOWN_FIELD", "subject_common_name"),
    ],
)
def test_invalid_create_bodies(admin, body, code, field):
    raw = json.dumps(body, ensure_ascii=False).encode()  # byte limits count UTF-8
    response = admin.post(PATH, content=raw, headers={"Content-Type": "application/json"})
    assert assert_error(response, 400, code)["details"]["field"] == field


def test_a_body_is_required(admin):
    assert_error(admin.post(PATH), 400, "ERR_INVALID_BODY")


@pytest.mark.parametrize(
    ("body", "code", "field"),
    [
        ({"ca_pem": x509_certificate()}, "ERR_UNKNOWN_FIELD", "ca_pem"),
        ({"not_after": "2099-01-01T00:00:00Z"}, "ERR_UNKNOWN_FIELD", "not_after"),
        ({"description": "x" * 256}, "ERR_FIELD_TOO_LONG", "description"),
        ({"metadata": 1}, "ERR_WRONG_TYPE", "metadata"),
    ],
)
def test_update_changes_only_description_and_metadata(admin, body, code, field):
    ca = admin.post(PATH, json={"ca_pem": x509_certificate(), "description": "keep"}).json()
    url = f"{PATH}/{ca['id']}"
    assert assert_error(admin.patch(url, json=body), 400, code)["details"]["field"] == field
    assert admin.get(url).json() == ca
    assert admin.patch(url).json() == ca  # an empty PATCH changes nothing


def test_accounts_are_isolated(admin, other):
    ca = admin.post(PATH, json={"ca_pem": x509_certificate(), "description": "mine"}).json()
    url = f"{PATH}/{ca['id']}"
    assert_error(other.get(url), 404, "ERR_NOT_FOUND")
    assert_error(other.patch(url, json={"description": "theirs"}), 404, "ERR_NOT_FOUND")
    assert_error(other.delete(url), 404, "ERR_NOT_FOUND")
    assert other.get(PATH).json()["certificate_authorities"] == []
    assert admin.get(url).json()["description"] == "mine"


def test_list_pages(admin):
    made = [admin.post(PATH, json={"ca_pem": x509_certificate()}).json()["id"] for _ in range(3)]
    first = admin.get(PATH, params={"limit": 2}).json()
    assert [c["id"] for c in first["certificate_authorities"]] == made[::-1][:2]
    assert first["uri"] == f"http://testserver{PATH}"
    second = admin.get(first["next_page_uri"].removeprefix("http://testserver")).json()
    assert [c["id"] for c in second["certificate_authorities"]] == [made[0]]
    assert second["next_page_uri"] is None
    alias = admin.get(PATH, params={"beforeId": made[1]}).json()["certificate_authorities"]
    assert [c["id"] for c in alias] == [made[0]]
    assert_error(
        admin.get(PATH, params={"before_id": made[0].replace("ca_", "ak_")}),
        400,
        "ERR_INVALID_PARAMETER",
    )
    assert_error(admin.get(PATH, params={"limit": 101}), 400, "ERR_INVALID_PARAMETER")
