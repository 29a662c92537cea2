"""TLS certificates: check an uploaded chain and its private key, and derive the API's fields.

`parse_tls_certificate` checks, in this order; each failure raises `CryptoError` with its
`Rule` and `field`, the request field at fault:

`certificate_pem`, a chain of PEM certificates, leaf first:

1. `FIELD_TOO_LONG`: more than `MAX_CHAIN_CHARS` characters or `MAX_CHAIN_CERTIFICATES`
   blocks.
2. `INVALID_PEM`: no PEM block, or markers that do not pair up. Text between blocks is
   ignored, as for CA certificates.
3. `NOT_A_CERTIFICATE`: a block labelled other than `CERTIFICATE` (e.g. the private key).
4. `INVALID_CERTIFICATE`: a block that is not base64 DER of an X.509 certificate, or a leaf
   whose fields cannot be decoded.
5. `UNSUPPORTED_KEY_TYPE`: the leaf's public key is not one of `KEY_TYPES` (below).
6. `CHAIN_OUT_OF_ORDER`: a certificate after the leaf whose subject is not the issuer of the
   one before it. Names are compared with case and runs of spaces folded, near OpenSSL's
   canonical form; signatures are not checked and the chain need not end at a root, let
   alone a trusted one. The chain is served as stored, and TLS 1.2 peers (RFC 5246 7.4.2)
   need each certificate to certify the one before it (TLS 1.3 only asks it of most).

`private_key_pem`, the leaf's private key:

7. `FIELD_TOO_LONG` (`MAX_KEY_CHARS`), then `INVALID_PEM` as above.
8. `ENCRYPTED_PRIVATE_KEY`: an `ENCRYPTED PRIVATE KEY` block, or a legacy block with
   `Proc-Type: 4,ENCRYPTED`; no passphrase can be given.
9. `INVALID_PRIVATE_KEY`: not exactly one `PRIVATE KEY` (PKCS #8), `RSA PRIVATE KEY`
   (PKCS #1) or `EC PRIVATE KEY` (SEC1) block (`EC PARAMETERS` blocks, which
   `openssl ecparam -genkey` writes before the key, are skipped), or a block that does not
   decode to a consistent key.
10. `UNSUPPORTED_KEY_TYPE`: RSA of 1024 to 8192 bits (`RSA_KEY_BITS`; larger keys take
    seconds to check), ECDSA on P-256, P-384 or P-521, or Ed25519; DSA, Ed448, X25519 and
    other curves are refused.

Then `PRIVATE_KEY_MISMATCH` (`private_key_pem`): the key's public key is not the leaf's.

Expired and not-yet-valid certificates are accepted; their dates are reported as they are.
`certificate_fields` derives the API's fields from any certificate, uploaded or issued here.
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from itertools import pairwise
from typing import cast

from cryptography import x509
from cryptography.exceptions import InternalError, UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from cryptography.hazmat.primitives.asymmetric.types import (
    CertificatePublicKeyTypes,
    PrivateKeyTypes,
)
from cryptography.x509.oid import NameOID

from tunnelgw.crypto import CryptoError, Rule
from tunnelgw.crypto.x509 import (
    CERTIFICATE_LABELS,
    UNDECODABLE,
    clean_text,
    extended_key_usages,
    key_usages,
    load_certificate,
    name_value,
    pem_blocks,
)

# A chain is a few certificates of a few KiB each; the bounds leave ample room.
MAX_CHAIN_CHARS = 64 * 1024
MAX_CHAIN_CERTIFICATES = 10
MAX_KEY_CHARS = 16 * 1024  # an 8192-bit RSA key is about 6.3 KiB of PEM

KEY_TYPES = ("rsa", "ecdsa", "ed25519")
RSA_KEY_BITS = (1024, 8192)
CURVES = frozenset({"secp256r1", "secp384r1", "secp521r1"})

KEY_LABELS = frozenset({"PRIVATE KEY", "RSA PRIVATE KEY", "EC PRIVATE KEY"})
_SKIPPED_LABELS = frozenset({"EC PARAMETERS"})
_KEY_FORMATS = "PRIVATE KEY (PKCS #8), RSA PRIVATE KEY (PKCS #1) or EC PRIVATE KEY (SEC1)"

Key = rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey | ed25519.Ed25519PrivateKey


@dataclass(frozen=True, slots=True)
class SubjectAlternativeNames:
    """The DNS names and IP addresses (as text) of the subject alternative name extension."""

    dns_names: tuple[str, ...]
    ips: tuple[str, ...]

    def as_api(self) -> dict[str, list[str]]:
        return {"dns_names": [*self.dns_names], "ips": [*self.ips]}


@dataclass(frozen=True, slots=True)
class CertificateFields:
    """The API fields a TLS certificate resource derives from its (leaf) certificate."""

    subject_common_name: str
    subject_alternative_names: SubjectAlternativeNames
    not_before: datetime
    not_after: datetime
    key_usages: tuple[str, ...]
    extended_key_usages: tuple[str, ...]
    private_key_type: str
    issuer_common_name: str
    serial_number: str
    subject_organization: str
    subject_organizational_unit: str
    subject_locality: str
    subject_province: str
    subject_country: str


@dataclass(frozen=True, slots=True)
class ParsedTlsCertificate:
    """A checked upload: the chain to store and serve, the key to wrap, the leaf's fields."""

    certificate_pem: str  # re-encoded, leaf first, 64-column PEM, trailing newline
    private_key_der: bytes  # PKCS #8, unencrypted: wrap it (tunnelgw.crypto.keys.wrap)
    fields: CertificateFields


def parse_tls_certificate(certificate_pem: str, private_key_pem: str) -> ParsedTlsCertificate:
    """The checked chain and key of an upload; raises CryptoError (see the module's rules)."""
    with _blame("certificate_pem"):
        chain = _chain(certificate_pem)
        fields = certificate_fields(chain[0])
        _check_order(chain)
    with _blame("private_key_pem"):
        key = _private_key(private_key_pem)
        if _spki(key.public_key()) != _spki(chain[0].public_key()):
            raise CryptoError(
                Rule.PRIVATE_KEY_MISMATCH,
                "The private key does not belong to the leaf certificate (the first in "
                "certificate_pem): their public keys differ.",
            )
    return ParsedTlsCertificate(
        certificate_pem="".join(_pem(cert) for cert in chain),
        private_key_der=key.private_bytes(
            serialization.Encoding.DER,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ),
        fields=fields,
    )


def certificate_fields(cert: x509.Certificate) -> CertificateFields:
    """The API fields of `cert`, uploaded or issued. A repeated name attribute gives its
    last value (the most specific), an absent one "". Raises CryptoError:
    INVALID_CERTIFICATE for fields that cannot be decoded, UNSUPPORTED_KEY_TYPE."""
    private_key_type = key_type(_public_key(cert), "The leaf certificate's public key")
    try:
        subject = cert.subject
        return CertificateFields(
            subject_common_name=name_value(subject, NameOID.COMMON_NAME),
            subject_alternative_names=_alternative_names(cert),
            not_before=cert.not_valid_before_utc.replace(microsecond=0),
            not_after=cert.not_valid_after_utc.replace(microsecond=0),
            key_usages=key_usages(cert),
            extended_key_usages=extended_key_usages(cert),
            private_key_type=private_key_type,
            issuer_common_name=name_value(cert.issuer, NameOID.COMMON_NAME),
            serial_number=serial_hex(cert.serial_number),
            subject_organization=name_value(subject, NameOID.ORGANIZATION_NAME),
            subject_organizational_unit=name_value(subject, NameOID.ORGANIZATIONAL_UNIT_NAME),
            subject_locality=name_value(subject, NameOID.LOCALITY_NAME),
            subject_province=name_value(subject, NameOID.STATE_OR_PROVINCE_NAME),
            subject_country=name_value(subject, NameOID.COUNTRY_NAME),
        )
    except UNDECODABLE as exc:
        raise CryptoError(
            Rule.INVALID_CERTIFICATE, f"The leaf certificate cannot be decoded: {exc}."
        ) from None


def serial_hex(serial: int) -> str:
    """`serial` in lowercase hex without leading zeros or separators, e.g. "1a2b" where
    `openssl x509 -serial` prints `serial=1A2B` (and `0A` for "a"); "-" before a negative
    one, which RFC 5280 forbids but old certificates have."""
    return format(serial, "x")


def key_type(key: CertificatePublicKeyTypes | PrivateKeyTypes, what: str = "The key") -> str:
    """The API key type of `key` (one of KEY_TYPES); raises CryptoError(UNSUPPORTED_KEY_TYPE),
    whose message starts with `what`."""
    if isinstance(key, rsa.RSAPublicKey | rsa.RSAPrivateKey):
        low, high = RSA_KEY_BITS
        if low <= key.key_size <= high:
            return "rsa"
        problem = f"RSA with {key.key_size} bits; RSA keys must have {low} to {high} bits"
    elif isinstance(key, ec.EllipticCurvePublicKey | ec.EllipticCurvePrivateKey):
        if key.curve.name in CURVES:
            return "ecdsa"
        problem = f"ECDSA on the curve {key.curve.name}; use P-256, P-384 or P-521"
    elif isinstance(key, ed25519.Ed25519PublicKey | ed25519.Ed25519PrivateKey):
        return "ed25519"
    else:
        kind = type(key).__name__.removesuffix("PublicKey").removesuffix("PrivateKey")
        problem = f"{kind}, not RSA, ECDSA or Ed25519"
    raise CryptoError(Rule.UNSUPPORTED_KEY_TYPE, f"{what} is {problem}.")


@contextmanager
def _blame(field: str) -> Iterator[None]:
    """Name `field` in every CryptoError raised inside."""
    try:
        yield
    except CryptoError as exc:
        exc.field = exc.field or field
        raise


def _public_key(cert: x509.Certificate) -> CertificatePublicKeyTypes:
    try:
        return cert.public_key()
    except UnsupportedAlgorithm as exc:
        raise CryptoError(
            Rule.UNSUPPORTED_KEY_TYPE,
            f"The leaf certificate's public key algorithm is not supported: {exc}.",
        ) from None
    except UNDECODABLE as exc:
        raise CryptoError(
            Rule.INVALID_CERTIFICATE, f"The leaf certificate's public key cannot be read: {exc}."
        ) from None


def _chain(text: str) -> list[x509.Certificate]:
    if len(text) > MAX_CHAIN_CHARS:
        raise CryptoError(
            Rule.FIELD_TOO_LONG,
            f"certificate_pem is {len(text)} characters long; at most {MAX_CHAIN_CHARS}.",
        )
    blocks = pem_blocks(text)
    other = next((label for label, _ in blocks if label not in CERTIFICATE_LABELS), None)
    if other is not None:
        raise CryptoError(
            Rule.NOT_A_CERTIFICATE,
            f"certificate_pem holds a {other!r} block; it takes only CERTIFICATE blocks "
            "(the private key goes in private_key_pem).",
        )
    if len(blocks) > MAX_CHAIN_CERTIFICATES:
        raise CryptoError(
            Rule.FIELD_TOO_LONG,
            f"certificate_pem holds {len(blocks)} certificates; at most {MAX_CHAIN_CERTIFICATES}.",
        )
    return [_load(number, body) for number, (_, body) in enumerate(blocks, start=1)]


def _load(number: int, body: str) -> x509.Certificate:
    try:
        return load_certificate(body)
    except CryptoError:
        raise CryptoError(
            Rule.INVALID_CERTIFICATE,
            f"Certificate {number} of certificate_pem is not base64 DER of an X.509 certificate.",
        ) from None


def _check_order(chain: list[x509.Certificate]) -> None:
    for number, (cert, issuer) in enumerate(pairwise(chain), start=1):
        try:
            if _folded(cert.issuer) == _folded(issuer.subject):
                continue
            wanted, found = cert.issuer.rfc4514_string(), issuer.subject.rfc4514_string()
        except UNDECODABLE as exc:
            raise CryptoError(
                Rule.INVALID_CERTIFICATE,
                f"Certificate {number} or {number + 1} cannot be decoded: {exc}.",
            ) from None
        raise CryptoError(
            Rule.CHAIN_OUT_OF_ORDER,
            f"Certificate {number + 1} of certificate_pem is not the issuer of certificate "
            f"{number}: certificate {number} names the issuer {wanted!r}, certificate "
            f"{number + 1} is {found!r}. List the leaf certificate first, then its issuer, "
            "then that one's issuer.",
        )


def _folded(name: x509.Name) -> tuple[frozenset[tuple[str, str | bytes]], ...]:
    """`name` for comparison: text values case-folded with runs of whitespace made one
    space, ends stripped (as OpenSSL's canonical name encoding)."""
    return tuple(
        frozenset(
            (
                attribute.oid.dotted_string,
                " ".join(attribute.value.casefold().split())
                if isinstance(attribute.value, str)
                else attribute.value,
            )
            for attribute in rdn
        )
        for rdn in name.rdns
    )


def _alternative_names(cert: x509.Certificate) -> SubjectAlternativeNames:
    try:
        names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return SubjectAlternativeNames((), ())
    return SubjectAlternativeNames(
        dns_names=tuple(clean_text(name) for name in names.get_values_for_type(x509.DNSName)),
        ips=tuple(_ip_text(ip) for ip in names.get_values_for_type(x509.IPAddress)),
    )


def _ip_text(
    ip: ipaddress.IPv4Address
    | ipaddress.IPv6Address
    | ipaddress.IPv4Network
    | ipaddress.IPv6Network,
) -> str:
    """RFC 5952 text: IPv4-mapped IPv6 addresses end in dotted quad on every Python."""
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return f"::ffff:{ip.ipv4_mapped}"
    return str(ip)


def _private_key(text: str) -> Key:
    if len(text) > MAX_KEY_CHARS:
        raise CryptoError(
            Rule.FIELD_TOO_LONG,
            f"private_key_pem is {len(text)} characters long; at most {MAX_KEY_CHARS}.",
        )
    der = _key_der(pem_blocks(text, expected="PRIVATE KEY"))
    # The type and size first, without RSA's consistency check: it tests p and q for
    # primality, which takes seconds above 4096 bits.
    key = _load_key(der, unchecked=True)
    key_type(key, "The private key")  # refuses every key that is not a `Key`
    if isinstance(key, rsa.RSAPrivateKey):
        key = _load_key(der, unchecked=False)
    return cast(Key, key)


def _key_der(blocks: list[tuple[str, str]]) -> bytes:
    """The DER of the one private key block; raises CryptoError."""
    keys = [(label, body) for label, body in blocks if label not in _SKIPPED_LABELS]
    if any(_is_encrypted(label, body) for label, body in keys):
        raise CryptoError(
            Rule.ENCRYPTED_PRIVATE_KEY,
            "The private key is encrypted and no passphrase can be given; upload it "
            "unencrypted (e.g. `openssl pkey -in key.pem -out key-plain.pem`).",
        )
    if [label for label, _ in keys] == ["DSA PRIVATE KEY"]:
        raise CryptoError(
            Rule.UNSUPPORTED_KEY_TYPE, "The private key is DSA, not RSA, ECDSA or Ed25519."
        )
    if len(keys) != 1 or keys[0][0] not in KEY_LABELS:
        raise CryptoError(Rule.INVALID_PRIVATE_KEY, _wrong_blocks([label for label, _ in keys]))
    try:
        return base64.b64decode("".join(keys[0][1].split()), validate=True)
    except (binascii.Error, ValueError):
        raise CryptoError(
            Rule.INVALID_PRIVATE_KEY, f"The {keys[0][0]} block is not valid base64."
        ) from None


def _is_encrypted(label: str, body: str) -> bool:
    """PKCS #8 encryption, or OpenSSL's legacy RFC 1421 header `Proc-Type: 4,ENCRYPTED`
    (a colon is no base64 character: no base64 line can look like a header)."""
    if label == "ENCRYPTED PRIVATE KEY":
        return True
    return any(
        line.strip().startswith("Proc-Type:") and "ENCRYPTED" in line for line in body.splitlines()
    )


def _wrong_blocks(labels: list[str]) -> str:
    expected = f"private_key_pem must hold one {_KEY_FORMATS} block"
    if not labels:
        return f"{expected}; it holds none."
    if len(labels) > 1:
        return f"{expected}; it holds {len(labels)} blocks ({', '.join(labels)})."
    if labels[0] == "OPENSSH PRIVATE KEY":
        return f"{expected}, not OpenSSH's format; convert it: `ssh-keygen -p -m PKCS8 -f key`."
    return f"{expected}, not a {labels[0]!r} block."


def _load_key(der: bytes, *, unchecked: bool) -> PrivateKeyTypes:
    try:
        return serialization.load_der_private_key(
            der, password=None, unsafe_skip_rsa_key_validation=unchecked
        )
    except TypeError:  # "Password was not given but private key is encrypted"
        raise CryptoError(
            Rule.ENCRYPTED_PRIVATE_KEY,
            "The private key is encrypted and no passphrase can be given; upload it unencrypted.",
        ) from None
    except UnsupportedAlgorithm as exc:
        raise CryptoError(
            Rule.UNSUPPORTED_KEY_TYPE, f"The private key's algorithm is not supported: {exc}."
        ) from None
    except (ValueError, InternalError):  # InternalError: e.g. an X448 OID on 32 key bytes
        raise CryptoError(
            Rule.INVALID_PRIVATE_KEY,
            f"The private key block does not hold a valid {_KEY_FORMATS} key.",
        ) from None


def _spki(key: CertificatePublicKeyTypes) -> bytes:
    return key.public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )


def _pem(cert: x509.Certificate) -> str:
    return cert.public_bytes(serialization.Encoding.PEM).decode("ascii")
