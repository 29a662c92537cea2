"""X.509 CA certificates: check an uploaded PEM, normalise it and derive the API's fields.

Rules, in the order they are checked (each raises `CryptoError` with its `Rule`):

1. `INVALID_PEM`: no `-----BEGIN ...-----` / `-----END ...-----` block, or the markers do
   not pair up. Text outside the blocks is ignored (RFC 7468 explanatory text).
2. `NOT_A_CERTIFICATE`: a block labelled other than `CERTIFICATE` (e.g. a private key).
3. `MULTIPLE_CERTIFICATES`: more than one certificate block; a CA is one certificate, and
   taking the first of a chain silently could store the wrong one.
4. `INVALID_CERTIFICATE`: the block is not base64 of a DER X.509 certificate, or the
   certificate's fields cannot be decoded.
5. `NOT_A_CA`: basic constraints absent or `CA:FALSE`.

Expired or not-yet-valid certificates are accepted; their dates are reported as they are.
The PEM reader, the certificate loader and the name and usage helpers are public: the TLS
certificate code (`tls`) reads chains and derives the same fields with them.
"""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass
from datetime import datetime

from cryptography import x509
from cryptography.hazmat.primitives.serialization import Encoding
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from tunnelgw.crypto import CryptoError, Rule

# Linear scan for PEM markers: labels are short and hold no hyphen (RFC 7468).
_MARKER = re.compile(r"-----(BEGIN|END) ([^\r\n-]{0,64})-----")
CERTIFICATE_LABELS = frozenset({"CERTIFICATE", "X509 CERTIFICATE"})
# What `cryptography` raises for DER it cannot read, at load or when a field is read
# (a name attribute of an unexpected ASN.1 type is a TypeError).
UNDECODABLE = (
    ValueError,
    TypeError,
    x509.InvalidVersion,
    x509.DuplicateExtension,
    x509.UnsupportedGeneralNameType,
)

# KeyUsage attribute names are the API names; encipher/decipher_only need key_agreement.
KEY_USAGES = (
    "digital_signature",
    "content_commitment",
    "key_encipherment",
    "data_encipherment",
    "key_agreement",
    "key_cert_sign",
    "crl_sign",
)
AGREEMENT_USAGES = ("encipher_only", "decipher_only")

# Extended key usages by name; any other OID is reported as its dotted string.
EXTENDED_KEY_USAGES = {
    ExtendedKeyUsageOID.SERVER_AUTH: "server_auth",
    ExtendedKeyUsageOID.CLIENT_AUTH: "client_auth",
    ExtendedKeyUsageOID.CODE_SIGNING: "code_signing",
    ExtendedKeyUsageOID.EMAIL_PROTECTION: "email_protection",
    ExtendedKeyUsageOID.TIME_STAMPING: "time_stamping",
    ExtendedKeyUsageOID.OCSP_SIGNING: "ocsp_signing",
    ExtendedKeyUsageOID.ANY_EXTENDED_KEY_USAGE: "any_extended_key_usage",
}


@dataclass(frozen=True, slots=True)
class CaCertificate:
    """A checked CA certificate: its normalised PEM and the fields the API derives."""

    pem: str
    subject_common_name: str
    not_before: datetime
    not_after: datetime
    key_usages: tuple[str, ...]
    extended_key_usages: tuple[str, ...]


def parse_ca(text: str) -> CaCertificate:
    """The CA certificate in `text` (one PEM certificate); raises CryptoError."""
    cert = load_certificate(_single_block(text))
    try:
        derived = _derive(cert)
        is_ca = _is_ca(cert)
    except UNDECODABLE as exc:
        raise CryptoError(
            Rule.INVALID_CERTIFICATE, f"The certificate cannot be decoded: {exc}."
        ) from None
    if not is_ca:
        raise CryptoError(
            Rule.NOT_A_CA,
            "The certificate is not a CA certificate (basic constraints CA:TRUE is required).",
        )
    return derived


def pem_blocks(text: str, expected: str = "CERTIFICATE") -> list[tuple[str, str]]:
    """Every (label, base64 body) PEM block of `text`, in order; raises
    CryptoError(INVALID_PEM), whose message names the `expected` label if there is none."""
    blocks: list[tuple[str, str]] = []
    open_label: str | None = None
    start = 0
    for marker in _MARKER.finditer(text):
        kind, label = marker.groups()
        if kind == "BEGIN" and open_label is None:
            open_label, start = label, marker.end()
        elif kind == "END" and open_label == label:
            blocks.append((label, text[start : marker.start()]))
            open_label = None
        else:
            marker_text = f"-----{kind} {label}-----"
            raise CryptoError(Rule.INVALID_PEM, f"Unexpected PEM marker {marker_text!r}.")
    if open_label is not None:
        raise CryptoError(Rule.INVALID_PEM, f"No '-----END {open_label}-----' marker.")
    if not blocks:
        raise CryptoError(
            Rule.INVALID_PEM, f"Not PEM: expected a '-----BEGIN {expected}-----' block."
        )
    return blocks


def _single_block(text: str) -> str:
    """The base64 body of the one certificate block of `text`; raises CryptoError."""
    blocks = pem_blocks(text)
    other = next((label for label, _ in blocks if label not in CERTIFICATE_LABELS), None)
    if other is not None:
        raise CryptoError(
            Rule.NOT_A_CERTIFICATE,
            f"The PEM holds a {other!r} block; send only the CA certificate (CERTIFICATE).",
        )
    if len(blocks) > 1:
        raise CryptoError(
            Rule.MULTIPLE_CERTIFICATES,
            f"The PEM holds {len(blocks)} certificates; send only the CA certificate.",
        )
    return blocks[0][1]


def load_certificate(body: str) -> x509.Certificate:
    """The certificate whose DER `body` holds in base64 (whitespace ignored); raises
    CryptoError(INVALID_CERTIFICATE)."""
    try:
        der = base64.b64decode("".join(body.split()), validate=True)
        return x509.load_der_x509_certificate(der)
    except UNDECODABLE:
        raise CryptoError(
            Rule.INVALID_CERTIFICATE,
            "The CERTIFICATE block does not hold a valid base64 DER X.509 certificate.",
        ) from None


def _derive(cert: x509.Certificate) -> CaCertificate:
    """The API fields of `cert`; raises ValueError for fields that cannot be decoded."""
    return CaCertificate(
        pem=cert.public_bytes(Encoding.PEM).decode("ascii"),
        subject_common_name=name_value(cert.subject, NameOID.COMMON_NAME),
        not_before=cert.not_valid_before_utc.replace(microsecond=0),
        not_after=cert.not_valid_after_utc.replace(microsecond=0),
        key_usages=key_usages(cert),
        extended_key_usages=extended_key_usages(cert),
    )


def name_value(name: x509.Name, oid: x509.ObjectIdentifier) -> str:
    """The value of the `oid` attribute of `name` (the last one, the most specific, if
    several: names run from the most general RDN to the most specific); "" if none."""
    attributes = name.get_attributes_for_oid(oid)
    return clean_text(attributes[-1].value) if attributes else ""


def clean_text(value: str | bytes) -> str:
    """`value` as text any database and JSON can store: no NUL, no lone surrogates."""
    text = value if isinstance(value, str) else value.decode("utf-8", "replace")
    return text.replace("\x00", "\ufffd").encode("utf-8", "replace").decode("utf-8")


def key_usages(cert: x509.Certificate) -> tuple[str, ...]:
    try:
        usage = cert.extensions.get_extension_for_class(x509.KeyUsage).value
    except x509.ExtensionNotFound:
        return ()
    names = [name for name in KEY_USAGES if getattr(usage, name)]
    if usage.key_agreement:  # the two flags are undefined (and raise) without it
        names += [name for name in AGREEMENT_USAGES if getattr(usage, name)]
    return tuple(names)


def extended_key_usages(cert: x509.Certificate) -> tuple[str, ...]:
    try:
        usages = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    except x509.ExtensionNotFound:
        return ()
    return tuple(EXTENDED_KEY_USAGES.get(oid, oid.dotted_string) for oid in usages)


def _is_ca(cert: x509.Certificate) -> bool:
    try:
        return cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    except x509.ExtensionNotFound:
        return False
