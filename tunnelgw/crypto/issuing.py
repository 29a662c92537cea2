"""The server's issuing CAs, the TLS server certificates they sign for reserved domains
(certificate management) and the TLS client certificates they sign from certificate signing
requests (Kubernetes operator bindings): pure X.509 work with `cryptography`, no database,
no HTTP.

Each result carries the API fields of its certificate, derived as for uploaded TLS
certificates (`tls.certificate_fields`).
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from datetime import datetime, timedelta

from cryptography import x509
from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from tunnelgw.core import ids
from tunnelgw.crypto import CryptoError, Rule
from tunnelgw.crypto.tls import CertificateFields, certificate_fields
from tunnelgw.crypto.tls import key_type as api_key_type
from tunnelgw.crypto.x509 import UNDECODABLE, pem_blocks

CA_VALIDITY = timedelta(days=3650)
# X.520's upper bound for a common name; longer domains are named in the SAN only.
MAX_COMMON_NAME = 64
KEY_TYPES = ("rsa", "ecdsa")
REQUEST_LABELS = frozenset({"CERTIFICATE REQUEST", "NEW CERTIFICATE REQUEST"})
RSA_KEY_SIZE = 2048

PrivateKey = rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey


@dataclass(frozen=True, slots=True)
class Issued:
    """A certificate and its private key: PEM (one certificate) and PKCS #8 DER, and the
    certificate's API fields."""

    certificate_pem: str
    private_key_der: bytes
    not_before: datetime
    not_after: datetime
    fields: CertificateFields


def ca_common_name(name: str) -> str:
    return f"tunnelgw issuing CA ({name})"[:MAX_COMMON_NAME]


def new_key(key_type: str) -> PrivateKey:
    """A fresh key: RSA 2048 (`rsa`) or ECDSA P-256 (`ecdsa`)."""
    if key_type == "rsa":
        return rsa.generate_private_key(public_exponent=65537, key_size=RSA_KEY_SIZE)
    if key_type == "ecdsa":
        return ec.generate_private_key(ec.SECP256R1())
    raise ValueError(f"unknown key type {key_type!r}")


def _der(key: PrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.DER,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _serial_number() -> int:
    """A random positive 159-bit serial number, as `x509.random_serial_number()` makes, but
    repeatable in seeded mode (tunnelgw.core.ids)."""
    return ids.random_source("serials").getrandbits(159) or 1


def _pem(cert: x509.Certificate) -> str:
    return cert.public_bytes(serialization.Encoding.PEM).decode("ascii")


def new_ca(name: str, now: datetime) -> Issued:
    """A self-signed ECDSA P-256 CA named after the authority `name`, valid for ~10 years."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, ca_common_name(name))])
    not_after = now + CA_VALIDITY
    usage = x509.KeyUsage(
        digital_signature=True,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=True,
        crl_sign=True,
        encipher_only=False,
        decipher_only=False,
    )
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(_serial_number())
        .not_valid_before(now)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(usage, critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), False)
        .sign(key, hashes.SHA256())
    )
    return Issued(_pem(cert), _der(key), now, not_after, certificate_fields(cert))


def _load_ca(ca_pem: str, ca_key_der: bytes) -> tuple[x509.Certificate, PrivateKey]:
    """The issuing CA's certificate and key (as `new_ca` made them)."""
    ca_key = serialization.load_der_private_key(ca_key_der, password=None)
    if not isinstance(ca_key, ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey):
        raise ValueError("the issuing CA key is neither ECDSA nor RSA")
    return x509.load_pem_x509_certificate(ca_pem.encode("ascii")), ca_key


def _leaf_usage(key_type: str) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=True,
        content_commitment=False,
        key_encipherment=key_type == "rsa",  # RSA key transport (TLS 1.2 RSA kex)
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=False,
        crl_sign=False,
        encipher_only=False,
        decipher_only=False,
    )


def issue(
    ca_pem: str,
    ca_key_der: bytes,
    domain: str,
    key_type: str,
    not_before: datetime,
    not_after: datetime,
    key: PrivateKey | None = None,
) -> Issued:
    """A TLS server certificate for `domain` (wildcards included) with `key` (a new `key_type`
    key when None), signed by the CA: SAN dNSName = domain, EKU serverAuth, CA:FALSE."""
    ca_cert, ca_key = _load_ca(ca_pem, ca_key_der)
    if key is None:
        key = new_key(key_type)
    names = [x509.NameAttribute(NameOID.COMMON_NAME, domain)] if len(domain) <= 64 else []
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name(names))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(domain)]), critical=not names)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_leaf_usage(key_type), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), False
        )
        .sign(ca_key, hashes.SHA256())
    )
    return Issued(_pem(cert), _der(key), not_before, not_after, certificate_fields(cert))


def load_request(text: str) -> x509.CertificateSigningRequest:
    """The one PEM certificate signing request (PKCS #10) of `text`, its self-signature
    verified; raises CryptoError: INVALID_PEM (not PEM), INVALID_CSR (another block, several,
    or not a decodable request), UNSUPPORTED_KEY_TYPE (a key that TLS certificates here cannot
    use) or CSR_SIGNATURE_INVALID."""
    blocks = pem_blocks(text, "CERTIFICATE REQUEST")
    if len(blocks) != 1 or blocks[0][0] not in REQUEST_LABELS:
        labels = ", ".join(repr(label) for label, _ in blocks)
        raise CryptoError(
            Rule.INVALID_CSR,
            f"The PEM holds {labels}; send exactly one 'CERTIFICATE REQUEST' block.",
        )
    try:
        der = base64.b64decode("".join(blocks[0][1].split()), validate=True)
        request = x509.load_der_x509_csr(der)
        public_key = request.public_key()
    except (*UNDECODABLE, UnsupportedAlgorithm) as exc:
        raise CryptoError(
            Rule.INVALID_CSR,
            f"The CERTIFICATE REQUEST block is not a valid DER PKCS #10 request ({exc}).",
        ) from None
    api_key_type(public_key, "The CSR's public key")
    if not request.is_signature_valid:  # also false for a signature algorithm it cannot run
        raise CryptoError(
            Rule.CSR_SIGNATURE_INVALID,
            "The CSR's signature does not verify with the public key it holds; sign it again "
            "with the matching private key.",
        )
    return request


def sign_request(
    ca_pem: str,
    ca_key_der: bytes,
    request_pem: str,
    common_name: str,
    not_before: datetime,
    not_after: datetime,
) -> str:
    """A TLS client certificate (PEM) for the public key of the signing request `request_pem`
    (checked by `load_request`), signed by the CA: subject CN = `common_name` (the CA names
    the holder, not the request), EKU clientAuth, CA:FALSE."""
    request = load_request(request_pem)
    ca_cert, ca_key = _load_ca(ca_pem, ca_key_der)
    public_key = request.public_key()
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(ca_cert.subject)
        .public_key(public_key)
        .serial_number(_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_leaf_usage(api_key_type(public_key)), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(public_key), False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), False
        )
        .sign(ca_key, hashes.SHA256())
    )
    return _pem(cert)
