"""tunnelgw.crypto.x509: CA certificates made with `cryptography`, checked rule by rule and
cross-checked with `openssl x509 -text` (when openssl is installed)."""

from __future__ import annotations

import base64
import random
import shutil
import subprocess
from datetime import UTC, datetime

import pytest
from cryptography import x509 as cx509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID

from tests.factories import x509_certificate
from tunnelgw.core.errors import Code
from tunnelgw.crypto import CryptoError, Rule, x509

UNKNOWN_EKU = cx509.ObjectIdentifier("1.3.6.1.4.1.311.10.3.4")


def rule_of(text: str) -> Rule:
    with pytest.raises(CryptoError) as caught:
        x509.parse_ca(text)
    return caught.value.rule


def test_every_rule_is_a_catalog_code():
    """Handlers map a rule to its error with `Code[rule.name]`."""
    assert {rule.name for rule in Rule} <= {code.name for code in Code}
    assert all(Code[rule.name].status == 400 for rule in Rule)


def test_fields_are_derived_from_the_certificate():
    pem = x509_certificate(
        common_names=("Example Root CA",),
        key_usages=("digital_signature", "key_cert_sign", "crl_sign"),
        extended_key_usages=(
            ExtendedKeyUsageOID.SERVER_AUTH,
            ExtendedKeyUsageOID.CLIENT_AUTH,
            UNKNOWN_EKU,
        ),
        not_before=datetime(2026, 1, 1, 12, 30, 5, tzinfo=UTC),
        not_after=datetime(2036, 1, 1, tzinfo=UTC),
    )
    ca = x509.parse_ca(pem)
    assert ca.pem == pem
    assert ca.pem.endswith("-----END CERTIFICATE-----\n")
    assert ca.subject_common_name == "Example Root CA"
    assert ca.not_before == datetime(2026, 1, 1, 12, 30, 5, tzinfo=UTC)
    assert ca.not_after == datetime(2036, 1, 1, tzinfo=UTC)
    assert ca.key_usages == ("digital_signature", "key_cert_sign", "crl_sign")
    assert ca.extended_key_usages == ("server_auth", "client_auth", "1.3.6.1.4.1.311.10.3.4")


def test_every_named_usage():
    all_ekus = tuple(x509.EXTENDED_KEY_USAGES)
    ca = x509.parse_ca(
        x509_certificate(
            key_usages=(*x509.KEY_USAGES, *x509.AGREEMENT_USAGES),
            extended_key_usages=all_ekus,
        )
    )
    assert ca.key_usages == (*x509.KEY_USAGES, *x509.AGREEMENT_USAGES)
    assert ca.extended_key_usages == (
        "server_auth",
        "client_auth",
        "code_signing",
        "email_protection",
        "time_stamping",
        "ocsp_signing",
        "any_extended_key_usage",
    )


def test_no_usage_extensions_and_no_common_name():
    ca = x509.parse_ca(x509_certificate(key_usages=None, common_names=()))
    assert (ca.key_usages, ca.extended_key_usages, ca.subject_common_name) == ((), (), "")


def test_the_last_of_several_common_names():
    assert x509.parse_ca(x509_certificate(common_names=("a", "b"))).subject_common_name == "b"


def test_expired_ca_is_accepted_with_its_dates():
    ca = x509.parse_ca(
        x509_certificate(
            not_before=datetime(2001, 1, 1, tzinfo=UTC),
            not_after=datetime(2002, 1, 1, tzinfo=UTC),
        )
    )
    assert ca.not_after == datetime(2002, 1, 1, tzinfo=UTC)


def test_pem_is_normalised():
    pem = x509_certificate()
    messy = "Subject: CN=Test CA\r\n\r\n  " + pem.replace("\n", "\r\n").replace("\r\n", "\r\n  ")
    assert x509.parse_ca(messy).pem == pem
    one_line_body = pem.replace("\n", "", 1)  # base64 may be wrapped anyhow
    assert x509.parse_ca(one_line_body.replace("\n-----END", "-----END")).pem == pem


def _private_key_pem() -> str:
    key = ec.generate_private_key(ec.SECP256R1())
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()


def _der_body(pem: str) -> bytes:
    return base64.b64decode("".join(pem.splitlines()[1:-1]))


def _pem(label: str, der: bytes) -> str:
    return f"-----BEGIN {label}-----\n{base64.b64encode(der).decode()}\n-----END {label}-----\n"


@pytest.mark.parametrize(
    "text",
    [
        "",
        "hello",
        "MIIBeTCCAR6gAwIBAgIUXJpaDslEnWQH496KrQAY9CSNYi8w",
        "-----BEGIN CERTIFICATE-----\nMIIB\n",
        "MIIB\n-----END CERTIFICATE-----\n",
        "-----BEGIN CERTIFICATE-----\nMIIB\n-----END PRIVATE KEY-----\n",
        "-----BEGIN CERTIFICATE-----\n-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----",
        "-----BEGIN CERTIFICATE-----" * 5000,
    ],
)
def test_not_pem(text):
    assert rule_of(text) is Rule.INVALID_PEM


def test_not_a_certificate():
    assert rule_of(_private_key_pem()) is Rule.NOT_A_CERTIFICATE
    assert rule_of(x509_certificate() + _private_key_pem()) is Rule.NOT_A_CERTIFICATE
    assert rule_of(_pem("TRUSTED CERTIFICATE", _der_body(x509_certificate()))) is (
        Rule.NOT_A_CERTIFICATE
    )


def test_more_than_one_certificate():
    assert rule_of(x509_certificate() + x509_certificate()) is Rule.MULTIPLE_CERTIFICATES


def test_duplicate_extensions_are_an_invalid_certificate():
    pem = x509_certificate(extended_key_usages=(ExtendedKeyUsageOID.SERVER_AUTH,))
    der = _der_body(pem)
    eku_oid, bc_oid = bytes.fromhex("0603551d25"), bytes.fromhex("0603551d13")
    assert der.count(eku_oid) == 1
    assert rule_of(_pem("CERTIFICATE", der.replace(eku_oid, bc_oid))) is Rule.INVALID_CERTIFICATE


@pytest.mark.parametrize(
    "body",
    [
        "!!!! not base64 !!!!",
        "AAAA====",
        base64.b64encode(b"not a certificate").decode(),
        base64.b64encode(b"\x30\x82\xff\xff" + b"\x00" * 32).decode(),
        "",
        "wrzDqcOp",  # non-ASCII after decoding is fine; it is still not DER
        "é",
    ],
)
def test_garbage_inside_the_pem(body):
    text = f"-----BEGIN CERTIFICATE-----\n{body}\n-----END CERTIFICATE-----\n"
    assert rule_of(text) is Rule.INVALID_CERTIFICATE


def test_truncated_der_is_an_invalid_certificate():
    der = _der_body(x509_certificate())
    assert rule_of(_pem("CERTIFICATE", der[:-10])) is Rule.INVALID_CERTIFICATE
    assert rule_of(_pem("CERTIFICATE", der + b"\x00")) is Rule.INVALID_CERTIFICATE


@pytest.mark.parametrize("ca", [False, None])
def test_not_a_ca(ca):
    assert rule_of(x509_certificate(ca=ca)) is Rule.NOT_A_CA


def test_error_messages_say_what_to_fix():
    with pytest.raises(CryptoError, match="2 certificates"):
        x509.parse_ca(x509_certificate() + x509_certificate())
    with pytest.raises(CryptoError, match="PRIVATE KEY"):
        x509.parse_ca(_private_key_pem())


@pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl is not installed")
def test_openssl_reads_the_same_fields(tmp_path):
    pem = x509_certificate(
        common_names=("Cross Check CA",),
        key_usages=("digital_signature", "key_cert_sign", "crl_sign"),
        extended_key_usages=(ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CODE_SIGNING),
        not_before=datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC),
        not_after=datetime(2031, 3, 4, 5, 6, 7, tzinfo=UTC),
    )
    ca = x509.parse_ca(pem)
    path = tmp_path / "ca.pem"
    path.write_text(ca.pem)
    text = subprocess.run(
        ["openssl", "x509", "-noout", "-text", "-in", str(path)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    assert "Subject: CN = Cross Check CA" in text
    assert "Not Before: Mar  4 05:06:07 2026 GMT" in text
    assert "Not After : Mar  4 05:06:07 2031 GMT" in text
    assert "CA:TRUE" in text
    assert "Digital Signature, Certificate Sign, CRL Sign" in text
    assert "TLS Web Server Authentication, Code Signing" in text
    assert ca.key_usages == ("digital_signature", "key_cert_sign", "crl_sign")
    assert ca.extended_key_usages == ("server_auth", "code_signing")


# A damaged serial may turn negative: accepted today with this warning, rejected by later
# cryptography releases (ValueError, so INVALID_CERTIFICATE).
@pytest.mark.filterwarnings(
    "ignore:Parsed a serial number:cryptography.utils.CryptographyDeprecationWarning"
)
def test_damaged_certificates_only_ever_raise_crypto_errors():
    """Flip bytes all over a valid DER certificate: every outcome is a result or a rule."""
    rng = random.Random(7)
    der = bytearray(
        _der_body(
            x509_certificate(
                extended_key_usages=(ExtendedKeyUsageOID.SERVER_AUTH, UNKNOWN_EKU),
                key_usages=("key_agreement", "encipher_only"),
            )
        )
    )
    rules = set()
    for _ in range(3000):
        damaged = bytearray(der)
        for _ in range(rng.randint(1, 3)):
            damaged[rng.randrange(len(damaged))] = rng.randrange(256)
        try:
            x509.parse_ca(_pem("CERTIFICATE", bytes(damaged)))
        except CryptoError as exc:
            rules.add(exc.rule)
    assert rules == {Rule.INVALID_CERTIFICATE, Rule.NOT_A_CA}
