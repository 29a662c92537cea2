"""Certificate signing requests (tunnelgw.crypto.issuing.load_request, sign_request): each
check's rule, and the client certificate an issuing CA signs from a request."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

from tunnelgw.crypto import CryptoError, Rule, issuing

NOW = datetime(2026, 11, 21, 10, 11, 14, tzinfo=UTC)


SHA256 = hashes.SHA256()


def request(key: object, algorithm: hashes.HashAlgorithm | None = SHA256) -> str:
    builder = x509.CertificateSigningRequestBuilder().subject_name(x509.Name([]))
    signed = builder.sign(key, algorithm)  # type: ignore[arg-type]
    return signed.public_bytes(serialization.Encoding.PEM).decode("ascii")


@pytest.mark.parametrize(
    ("key", "algorithm", "kind"),
    [
        (ec.generate_private_key(ec.SECP256R1()), hashes.SHA512(), ec.EllipticCurvePublicKey),
        (rsa.generate_private_key(65537, 2048), hashes.SHA256(), rsa.RSAPublicKey),
        (ed25519.Ed25519PrivateKey.generate(), None, ed25519.Ed25519PublicKey),
    ],
)
def test_a_request_is_signed_with_its_own_key(key, algorithm, kind):
    ca = issuing.new_ca("kubernetes-operator-bindings", NOW - timedelta(days=1))
    pem = issuing.sign_request(
        ca.certificate_pem,
        ca.private_key_der,
        request(key, algorithm),
        "k8sop_x",
        NOW,
        NOW + timedelta(days=365),
    )
    cert = x509.load_pem_x509_certificate(pem.encode())
    assert isinstance(cert.public_key(), kind)
    assert (cert.not_valid_before_utc, cert.not_valid_after_utc) == (NOW, NOW + timedelta(365))
    cert.verify_directly_issued_by(x509.load_pem_x509_certificate(ca.certificate_pem.encode()))
    usage = cert.extensions.get_extension_for_class(x509.KeyUsage).value
    assert usage.key_encipherment is (kind is rsa.RSAPublicKey)


def test_the_rules():
    key = ec.generate_private_key(ec.SECP256R1())
    good = request(key)
    cases = [
        ("no pem here", Rule.INVALID_PEM),
        (good.replace("CERTIFICATE REQUEST", "PRIVATE KEY"), Rule.INVALID_CSR),
        (good + good, Rule.INVALID_CSR),
        (
            "-----BEGIN CERTIFICATE REQUEST-----\n!!\n-----END CERTIFICATE REQUEST-----",
            Rule.INVALID_CSR,
        ),
        (request(ec.generate_private_key(ec.SECP192R1())), Rule.UNSUPPORTED_KEY_TYPE),
    ]
    for text, rule in cases:
        with pytest.raises(CryptoError) as caught:
            issuing.load_request(text)
        assert caught.value.rule is rule, text
    assert issuing.load_request(good.replace("CERTIFICATE REQUEST", "NEW CERTIFICATE REQUEST"))


def test_a_signature_algorithm_it_cannot_run_does_not_verify():
    key = ec.generate_private_key(ec.SECP256R1())
    der = bytearray(
        x509.load_pem_x509_csr(request(key, hashes.SHA512()).encode()).public_bytes(
            serialization.Encoding.DER
        )
    )
    oid = bytes.fromhex("2a8648ce3d040304")  # ecdsa-with-SHA512 -> an unassigned sibling
    at = der.rfind(oid) + len(oid) - 1
    der[at] = 0x09
    pem = x509.load_der_x509_csr(bytes(der)).public_bytes(serialization.Encoding.PEM).decode()
    with pytest.raises(CryptoError) as caught:
        issuing.load_request(pem)
    assert caught.value.rule is Rule.CSR_SIGNATURE_INVALID


def test_a_ca_key_of_another_type_is_refused():
    key = ed25519.Ed25519PrivateKey.generate()
    der = key.private_bytes(
        serialization.Encoding.DER, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    ca = issuing.new_ca("x", NOW)
    with pytest.raises(ValueError, match="neither ECDSA nor RSA"):
        issuing.sign_request(ca.certificate_pem, der, request(key, None), "k8sop_x", NOW, NOW)
