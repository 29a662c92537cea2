"""tunnelgw.crypto.tls: chains of one to three certificates and their keys made here with
`cryptography`, checked rule by rule, and cross-checked with `openssl` (when installed)."""

from __future__ import annotations

import base64
import functools
import ipaddress
import random
import shutil
import subprocess
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest
from cryptography import x509 as cx509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import dsa, ec, ed448, ed25519, rsa, x25519
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from tunnelgw.core.errors import Code
from tunnelgw.crypto import CryptoError, Rule, issuing, tls

NOT_BEFORE = datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC)
NOT_AFTER = datetime(2027, 3, 4, 5, 6, 7, tzinfo=UTC)
UNKNOWN_EKU = cx509.ObjectIdentifier("1.3.6.1.4.1.311.10.3.4")
EC_PARAMETERS_P256 = (
    "-----BEGIN EC PARAMETERS-----\nBggqhkjOPQMBBw==\n-----END EC PARAMETERS-----\n"
)

openssl = pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl is not installed")


# Keys are made once per (kind, instance): RSA generation is the slow part of these tests.
@functools.cache
def key_of(kind: str, instance: int = 0) -> tls.Key:
    if kind == "rsa":
        return rsa.generate_private_key(public_exponent=65537, key_size=2048)
    if kind == "ed25519":
        return ed25519.Ed25519PrivateKey.generate()
    curves = {"p256": ec.SECP256R1(), "p384": ec.SECP384R1(), "p521": ec.SECP521R1()}
    return ec.generate_private_key(curves[kind])


@functools.cache
def dsa_key() -> dsa.DSAPrivateKey:
    return dsa.generate_private_key(key_size=1024)


def name(*attributes: tuple[cx509.ObjectIdentifier, str]) -> cx509.Name:
    return cx509.Name([cx509.NameAttribute(oid, value) for oid, value in attributes])


def cn(value: str) -> cx509.Name:
    return name((NameOID.COMMON_NAME, value))


def certificate(
    subject: cx509.Name,
    key: tls.Key,
    *,
    issuer: cx509.Name | None = None,
    signer: tls.Key | None = None,
    ca: bool = False,
    serial: int | None = None,
    sans: list[cx509.GeneralName] | None = None,
    usage: cx509.KeyUsage | None = None,
    ekus: list[cx509.ObjectIdentifier] | None = None,
    not_before: datetime = NOT_BEFORE,
    not_after: datetime = NOT_AFTER,
) -> cx509.Certificate:
    """A certificate of `key` for `subject`, signed by `signer` (self-signed by default)."""
    signer = signer or key
    builder = (
        cx509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer or subject)
        .public_key(key.public_key())
        .serial_number(cx509.random_serial_number() if serial is None else serial)
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(cx509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if sans is not None:
        builder = builder.add_extension(cx509.SubjectAlternativeName(sans), critical=False)
    if usage is not None:
        builder = builder.add_extension(usage, critical=True)
    if ekus is not None:
        builder = builder.add_extension(cx509.ExtendedKeyUsage(ekus), critical=False)
    algorithm = None if isinstance(signer, ed25519.Ed25519PrivateKey) else hashes.SHA256()
    return builder.sign(signer, algorithm)


def usage(**flags: bool) -> cx509.KeyUsage:
    names = ("content_commitment", "key_encipherment", "data_encipherment", "key_agreement")
    names += ("key_cert_sign", "crl_sign", "encipher_only", "decipher_only")
    return cx509.KeyUsage(
        digital_signature=flags.get("digital_signature", False),
        **{flag: flags.get(flag, False) for flag in names},
    )


@dataclass
class Chain:
    root: cx509.Certificate
    intermediate: cx509.Certificate
    leaf: cx509.Certificate
    leaf_key: tls.Key


def chain(leaf_kind: str = "p256", **leaf: object) -> Chain:
    """root (ECDSA P-384) -> intermediate (RSA) -> leaf (`leaf_kind`)."""
    root_key, intermediate_key = key_of("p384", 1), key_of("rsa", 1)
    root_name, intermediate_name = cn("Test Root CA"), cn("Test Intermediate CA")
    root = certificate(root_name, root_key, ca=True)
    intermediate = certificate(
        intermediate_name, intermediate_key, issuer=root_name, signer=root_key, ca=True
    )
    leaf_key = key_of(leaf_kind)
    subject = leaf.pop("subject", cn("www.example.com"))
    assert isinstance(subject, cx509.Name)
    made = certificate(
        subject,
        leaf_key,
        issuer=intermediate_name,
        signer=intermediate_key,
        **leaf,
    )
    return Chain(root, intermediate, made, leaf_key)


def pem(*certs: cx509.Certificate) -> str:
    return "".join(c.public_bytes(serialization.Encoding.PEM).decode() for c in certs)


def key_pem(
    key: object,
    fmt: serialization.PrivateFormat = serialization.PrivateFormat.PKCS8,
    encryption: serialization.KeySerializationEncryption | None = None,
) -> str:
    assert hasattr(key, "private_bytes")
    data: bytes = key.private_bytes(
        serialization.Encoding.PEM, fmt, encryption or serialization.NoEncryption()
    )
    return data.decode()


def pkcs8(key: tls.Key) -> bytes:
    return key.private_bytes(
        serialization.Encoding.DER,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def block(label: str, der: bytes) -> str:
    body = base64.encodebytes(der).decode()
    return f"-----BEGIN {label}-----\n{body}-----END {label}-----\n"


def error_of(certificate_pem: str, private_key_pem: str) -> CryptoError:
    with pytest.raises(CryptoError) as caught:
        tls.parse_tls_certificate(certificate_pem, private_key_pem)
    return caught.value


def cert_error(certificate_pem: str) -> Rule:
    """The rule `certificate_pem` breaks (with a valid key of the default leaf)."""
    error = error_of(certificate_pem, key_pem(key_of("p256")))
    assert error.field == "certificate_pem"
    return error.rule


def key_error(private_key_pem: str) -> Rule:
    """The rule `private_key_pem` breaks (with a valid chain)."""
    made = chain()
    error = error_of(pem(made.leaf, made.intermediate, made.root), private_key_pem)
    assert error.field == "private_key_pem"
    return error.rule


# -- The catalog -------------------------------------------------------------------------------


def test_new_rules_are_400_catalog_codes():
    new = {
        Rule.CHAIN_OUT_OF_ORDER: "ERR_CHAIN_OUT_OF_ORDER",
        Rule.INVALID_PRIVATE_KEY: "ERR_INVALID_PRIVATE_KEY",
        Rule.ENCRYPTED_PRIVATE_KEY: "ERR_ENCRYPTED_PRIVATE_KEY",
        Rule.UNSUPPORTED_KEY_TYPE: "ERR_UNSUPPORTED_KEY_TYPE",
        Rule.PRIVATE_KEY_MISMATCH: "ERR_PRIVATE_KEY_MISMATCH",
        Rule.FIELD_TOO_LONG: "ERR_FIELD_TOO_LONG",
    }
    for rule, error_code in new.items():
        code = Code[rule.name]
        assert (code.error_code, code.status) == (error_code, 400)


# -- Fields ------------------------------------------------------------------------------------


def test_every_field_of_a_three_certificate_chain():
    subject = name(
        (NameOID.COUNTRY_NAME, "NZ"),
        (NameOID.STATE_OR_PROVINCE_NAME, "Canterbury"),
        (NameOID.LOCALITY_NAME, "Christchurch"),
        (NameOID.ORGANIZATION_NAME, "Example Ltd"),
        (NameOID.ORGANIZATIONAL_UNIT_NAME, "Platform"),
        (NameOID.COMMON_NAME, "www.example.com"),
    )
    sans: list[cx509.GeneralName] = [
        cx509.DNSName("www.example.com"),
        cx509.DNSName("*.api.example.com"),
        cx509.IPAddress(ipaddress.IPv4Address("192.0.2.10")),
        cx509.IPAddress(ipaddress.IPv6Address("2001:db8:0:0::1")),
        cx509.RFC822Name("ops@example.com"),  # neither a DNS name nor an IP: not reported
        cx509.IPAddress(ipaddress.IPv6Address("::ffff:198.51.100.7")),
    ]
    made = chain(
        "rsa",
        subject=subject,
        serial=0x00AB_CDEF_0123_4567_89,
        sans=sans,
        usage=usage(digital_signature=True, key_encipherment=True),
        ekus=[ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH, UNKNOWN_EKU],
    )
    parsed = tls.parse_tls_certificate(
        pem(made.leaf, made.intermediate, made.root), key_pem(made.leaf_key)
    )
    assert parsed.certificate_pem == pem(made.leaf, made.intermediate, made.root)
    assert parsed.private_key_der == pkcs8(made.leaf_key)
    assert parsed.fields == tls.CertificateFields(
        subject_common_name="www.example.com",
        subject_alternative_names=tls.SubjectAlternativeNames(
            dns_names=("www.example.com", "*.api.example.com"),
            ips=("192.0.2.10", "2001:db8::1", "::ffff:198.51.100.7"),
        ),
        not_before=NOT_BEFORE,
        not_after=NOT_AFTER,
        key_usages=("digital_signature", "key_encipherment"),
        extended_key_usages=("server_auth", "client_auth", "1.3.6.1.4.1.311.10.3.4"),
        private_key_type="rsa",
        issuer_common_name="Test Intermediate CA",
        serial_number="abcdef0123456789",
        subject_organization="Example Ltd",
        subject_organizational_unit="Platform",
        subject_locality="Christchurch",
        subject_province="Canterbury",
        subject_country="NZ",
    )
    assert parsed.fields.subject_alternative_names.as_api() == {
        "dns_names": ["www.example.com", "*.api.example.com"],
        "ips": ["192.0.2.10", "2001:db8::1", "::ffff:198.51.100.7"],
    }
    assert parsed.fields.not_before.tzinfo is UTC


@pytest.mark.parametrize(
    ("kind", "key_type"),
    [
        ("rsa", "rsa"),
        ("p256", "ecdsa"),
        ("p384", "ecdsa"),
        ("p521", "ecdsa"),
        ("ed25519", "ed25519"),
    ],
)
def test_leaf_key_types(kind, key_type):
    made = chain(kind)
    for certs in [(made.leaf,), (made.leaf, made.intermediate)]:
        parsed = tls.parse_tls_certificate(pem(*certs), key_pem(made.leaf_key))
        assert parsed.fields.private_key_type == key_type
        assert parsed.private_key_der == pkcs8(made.leaf_key)
        assert parsed.certificate_pem == pem(*certs)


def test_a_self_signed_certificate_alone():
    key = key_of("ed25519")
    cert = certificate(cn("localhost"), key, sans=[cx509.DNSName("localhost")])
    parsed = tls.parse_tls_certificate(pem(cert), key_pem(key))
    assert parsed.fields.issuer_common_name == parsed.fields.subject_common_name == "localhost"
    assert parsed.fields.subject_alternative_names.dns_names == ("localhost",)


@pytest.mark.parametrize(
    ("kind", "fmt"),
    [
        ("rsa", serialization.PrivateFormat.PKCS8),
        ("rsa", serialization.PrivateFormat.TraditionalOpenSSL),  # RSA PRIVATE KEY (PKCS #1)
        ("p256", serialization.PrivateFormat.PKCS8),
        ("p384", serialization.PrivateFormat.TraditionalOpenSSL),  # EC PRIVATE KEY (SEC1)
        ("ed25519", serialization.PrivateFormat.PKCS8),
    ],
)
def test_key_formats_are_stored_as_pkcs8(kind, fmt):
    made = chain(kind)
    text = key_pem(made.leaf_key, fmt)
    label = {"rsa": "RSA PRIVATE KEY", "p384": "EC PRIVATE KEY"}.get(kind, "PRIVATE KEY")
    if fmt is serialization.PrivateFormat.TraditionalOpenSSL:
        assert text.startswith(f"-----BEGIN {label}-----")
    parsed = tls.parse_tls_certificate(pem(made.leaf), text)
    assert parsed.private_key_der == pkcs8(made.leaf_key)
    reloaded = serialization.load_der_private_key(parsed.private_key_der, password=None)
    assert reloaded.public_key() == made.leaf_key.public_key()


def test_ec_parameters_before_the_key_are_skipped():
    """`openssl ecparam -genkey -name prime256v1` writes EC PARAMETERS, then the key."""
    made = chain("p256")
    sec1 = key_pem(made.leaf_key, serialization.PrivateFormat.TraditionalOpenSSL)
    parsed = tls.parse_tls_certificate(pem(made.leaf), EC_PARAMETERS_P256 + sec1)
    assert parsed.private_key_der == pkcs8(made.leaf_key)


def test_absent_attributes_and_extensions_are_empty():
    key = key_of("p256")
    cert = certificate(cx509.Name([]), key, issuer=cx509.Name([]))
    fields = tls.parse_tls_certificate(pem(cert), key_pem(key)).fields
    assert fields.subject_alternative_names == tls.SubjectAlternativeNames((), ())
    assert fields.subject_alternative_names.as_api() == {"dns_names": [], "ips": []}
    assert (fields.key_usages, fields.extended_key_usages) == ((), ())
    empty = (
        fields.subject_common_name,
        fields.issuer_common_name,
        fields.subject_organization,
        fields.subject_organizational_unit,
        fields.subject_locality,
        fields.subject_province,
        fields.subject_country,
    )
    assert empty == ("",) * 7


def test_a_repeated_attribute_gives_its_last_value():
    subject = name(
        (NameOID.ORGANIZATION_NAME, "Example Group"),
        (NameOID.ORGANIZATION_NAME, "Example Ltd"),
        (NameOID.ORGANIZATIONAL_UNIT_NAME, "Engineering"),
        (NameOID.ORGANIZATIONAL_UNIT_NAME, "Platform"),
        (NameOID.COMMON_NAME, "example.com"),
        (NameOID.COMMON_NAME, "www.example.com"),
    )
    issuer = name((NameOID.COMMON_NAME, "Root"), (NameOID.COMMON_NAME, "Issuing CA 2"))
    key = key_of("p256")
    fields = tls.certificate_fields(certificate(subject, key, issuer=issuer))
    assert fields.subject_organization == "Example Ltd"
    assert fields.subject_organizational_unit == "Platform"
    assert fields.subject_common_name == "www.example.com"
    assert fields.issuer_common_name == "Issuing CA 2"


def test_expired_and_future_certificates_are_accepted_with_their_dates():
    for not_before, not_after in [
        (datetime(2001, 1, 1, tzinfo=UTC), datetime(2002, 1, 1, tzinfo=UTC)),
        (datetime(2090, 1, 1, tzinfo=UTC), datetime(2091, 1, 1, 0, 0, 1, tzinfo=UTC)),
    ]:
        made = chain(not_before=not_before, not_after=not_after)
        fields = tls.parse_tls_certificate(pem(made.leaf), key_pem(made.leaf_key)).fields
        assert (fields.not_before, fields.not_after) == (not_before, not_after)


@pytest.mark.parametrize(
    ("serial", "text"),
    [(1, "1"), (0x0A, "a"), (0x80, "80"), (0xFF00, "ff00"), (2**159 - 1, "7" + "f" * 39)],
)
def test_serial_number_is_lowercase_hex_without_leading_zeros(serial, text):
    made = chain(serial=serial)
    assert (
        tls.parse_tls_certificate(pem(made.leaf), key_pem(made.leaf_key)).fields.serial_number
        == text
    )


# A zero serial is accepted today with this warning, refused by later cryptography releases
# (a ValueError at load, so INVALID_CERTIFICATE).
@pytest.mark.filterwarnings(
    "ignore:Parsed a serial number:cryptography.utils.CryptographyDeprecationWarning"
)
def test_a_zero_serial_number():
    made = chain(serial=1)
    der = made.leaf.public_bytes(serialization.Encoding.DER)
    zero = der.replace(bytes.fromhex("a003020102020101"), bytes.fromhex("a003020102020100"), 1)
    assert zero != der
    try:
        fields = tls.parse_tls_certificate(
            block("CERTIFICATE", zero), key_pem(made.leaf_key)
        ).fields
    except CryptoError as exc:
        assert exc.rule is Rule.INVALID_CERTIFICATE  # noqa: PT017 - either outcome is right
    else:
        assert fields.serial_number == "0"
    assert tls.serial_hex(-0x1A) == "-1a"


def test_the_chain_is_normalised():
    made = chain()
    wanted = pem(made.leaf, made.intermediate)
    messy = (
        "subject=CN = www.example.com\r\n"
        + pem(made.leaf).replace("\n", "\r\n")
        + "\n\n  issuer text, ignored\n"
        + pem(made.intermediate)
        .replace("BEGIN CERTIFICATE", "BEGIN X509 CERTIFICATE")
        .replace("END CERTIFICATE", "END X509 CERTIFICATE")
        .replace("\n", "\n   ")
    )
    parsed = tls.parse_tls_certificate(messy, "junk before\n" + key_pem(made.leaf_key) + "after")
    assert parsed.certificate_pem == wanted
    assert parsed.certificate_pem.endswith("-----END CERTIFICATE-----\n")
    assert all(len(line) <= 64 for line in parsed.certificate_pem.splitlines())


# -- certificate_pem errors --------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "",
        "hello",
        "-----BEGIN CERTIFICATE-----\nMIIB\n",
        "-----BEGIN CERTIFICATE-----\nMIIB\n-----END PRIVATE KEY-----\n",
    ],
)
def test_not_pem(text):
    assert cert_error(text) is Rule.INVALID_PEM


def test_a_block_that_is_not_a_certificate():
    made = chain()
    assert cert_error(key_pem(made.leaf_key)) is Rule.NOT_A_CERTIFICATE
    assert cert_error(pem(made.leaf) + key_pem(made.leaf_key)) is Rule.NOT_A_CERTIFICATE
    error = error_of(pem(made.leaf) + key_pem(made.leaf_key), key_pem(made.leaf_key))
    assert "'PRIVATE KEY' block" in error.msg


@pytest.mark.parametrize(
    "body",
    ["!!!! not base64 !!!!", base64.b64encode(b"not a certificate").decode(), ""],
)
def test_garbage_inside_a_block(body):
    made = chain()
    garbage = f"-----BEGIN CERTIFICATE-----\n{body}\n-----END CERTIFICATE-----\n"
    assert cert_error(garbage) is Rule.INVALID_CERTIFICATE
    assert cert_error(pem(made.leaf) + garbage) is Rule.INVALID_CERTIFICATE
    assert "Certificate 2 of certificate_pem" in error_of(pem(made.leaf) + garbage, "").msg


def test_truncated_certificate():
    der = chain().leaf.public_bytes(serialization.Encoding.DER)
    assert cert_error(block("CERTIFICATE", der[:-10])) is Rule.INVALID_CERTIFICATE


def test_oversize_chain():
    made = chain()
    assert len(pem(made.leaf)) * tls.MAX_CHAIN_CERTIFICATES < tls.MAX_CHAIN_CHARS
    eleven = pem(made.leaf) * (tls.MAX_CHAIN_CERTIFICATES + 1)
    assert cert_error(eleven) is Rule.FIELD_TOO_LONG
    padded = pem(made.leaf) + " " * tls.MAX_CHAIN_CHARS
    assert cert_error(padded) is Rule.FIELD_TOO_LONG
    # Just within the bounds: fine.
    fits = pem(made.leaf) + " " * (tls.MAX_CHAIN_CHARS - len(pem(made.leaf)))
    assert tls.parse_tls_certificate(fits, key_pem(made.leaf_key)).certificate_pem == pem(made.leaf)


def test_unsupported_leaf_key():
    key = dsa_key()
    cert = (
        cx509.CertificateBuilder()
        .subject_name(cn("dsa"))
        .issuer_name(cn("dsa"))
        .public_key(key.public_key())
        .serial_number(1)
        .not_valid_before(NOT_BEFORE)
        .not_valid_after(NOT_AFTER)
        .sign(key, hashes.SHA256())
    )
    error = error_of(pem(cert), key_pem(key))
    assert (error.rule, error.field) == (Rule.UNSUPPORTED_KEY_TYPE, "certificate_pem")
    assert "DSA" in error.msg


# -- Chain order -------------------------------------------------------------------------------


def test_chains_out_of_order_are_refused():
    made = chain()
    key = key_pem(made.leaf_key)
    for certs in [
        (made.leaf, made.root, made.intermediate),
        (made.leaf, made.root),  # the intermediate left out
        (made.root, made.intermediate, made.leaf),  # root first
        (made.intermediate, made.leaf),
    ]:
        error = error_of(pem(*certs), key)
        assert (error.rule, error.field) == (Rule.CHAIN_OUT_OF_ORDER, "certificate_pem")
    error = error_of(pem(made.leaf, made.root, made.intermediate), key)
    assert "Certificate 2 of certificate_pem is not the issuer of certificate 1" in error.msg
    assert "names the issuer 'CN=Test Intermediate CA'" in error.msg
    assert "certificate 2 is 'CN=Test Root CA'" in error.msg


def test_partial_chains_in_order_are_accepted():
    made = chain()
    key = key_pem(made.leaf_key)
    for certs in [
        (made.leaf,),
        (made.leaf, made.intermediate),
        (made.leaf, made.intermediate, made.root),
    ]:
        assert tls.parse_tls_certificate(pem(*certs), key).certificate_pem == pem(*certs)


def test_an_undecodable_name_further_up_the_chain():
    made = chain()
    der = made.intermediate.public_bytes(serialization.Encoding.DER)
    subject_cn = b"\x0c\x14Test Intermediate CA"  # UTF8String
    assert der.count(subject_cn) == 1
    damaged = der.replace(subject_cn, b"\x02" + subject_cn[1:])  # an INTEGER
    error = error_of(pem(made.leaf) + block("CERTIFICATE", damaged), key_pem(made.leaf_key))
    assert (error.rule, error.field) == (Rule.INVALID_CERTIFICATE, "certificate_pem")


def test_names_are_compared_with_case_and_spaces_folded():
    issuer_key, leaf_key = key_of("p384", 1), key_of("p256")
    issuer = certificate(cn("Test  Issuing CA"), issuer_key, ca=True)
    leaf = certificate(cn("leaf"), leaf_key, issuer=cn(" test issuing  ca "), signer=issuer_key)
    parsed = tls.parse_tls_certificate(pem(leaf, issuer), key_pem(leaf_key))
    assert parsed.fields.issuer_common_name == " test issuing  ca "


# -- private_key_pem errors --------------------------------------------------------------------


@pytest.mark.parametrize("text", ["", "not a key", "-----BEGIN PRIVATE KEY-----\nMIIB\n"])
def test_key_not_pem(text):
    assert key_error(text) is Rule.INVALID_PEM


def test_key_that_cannot_be_read():
    made = chain()
    other = key_of("rsa")
    garbage = [
        block("PRIVATE KEY", b"not a key"),
        "-----BEGIN PRIVATE KEY-----\n!!!!\n-----END PRIVATE KEY-----\n",
        block("PRIVATE KEY", pkcs8(key_of("p256"))[:-5]),
        pem(made.leaf),  # a certificate
        block("PUBLIC KEY", b"\x30\x00"),
        key_pem(key_of("p256")) + key_pem(other),  # two keys
        EC_PARAMETERS_P256,  # parameters and no key
        block("OPENSSH PRIVATE KEY", b"openssh-key-v1\x00"),
    ]
    for text in garbage:
        assert key_error(text) is Rule.INVALID_PRIVATE_KEY, text
    error = error_of(pem(made.leaf), block("OPENSSH PRIVATE KEY", b"openssh-key-v1\x00"))
    assert "ssh-keygen -p -m PKCS8" in error.msg


def test_unknown_key_algorithms():
    """An Ed25519 PKCS #8 key relabelled with another algorithm's OID."""
    der = pkcs8(key_of("ed25519"))
    ed25519_oid = bytes.fromhex("06032b6570")  # 1.3.101.112
    assert der.count(ed25519_oid) == 1
    unknown = der.replace(ed25519_oid, bytes.fromhex("06032b6563"))  # 1.3.101.99
    assert key_error(block("PRIVATE KEY", unknown)) is Rule.UNSUPPORTED_KEY_TYPE
    # X448 with 32 key bytes: OpenSSL fails with an "internal" error, not a ValueError.
    x448 = der.replace(ed25519_oid, bytes.fromhex("06032b656f"))  # 1.3.101.111
    assert key_error(block("PRIVATE KEY", x448)) is Rule.INVALID_PRIVATE_KEY
    made = chain()  # and OpenSSL carries on as before
    assert tls.parse_tls_certificate(pem(made.leaf), key_pem(made.leaf_key)).fields


@pytest.mark.parametrize(
    ("kind", "fmt", "label"),
    [
        ("p256", serialization.PrivateFormat.PKCS8, "PRIVATE KEY"),
        ("p256", serialization.PrivateFormat.TraditionalOpenSSL, "EC PRIVATE KEY"),
        ("ed25519", serialization.PrivateFormat.PKCS8, "PRIVATE KEY"),
    ],
)
def test_damaged_keys_only_ever_raise_crypto_errors(kind, fmt, label):
    """Flip bytes all over a valid key: every outcome is a result or a rule."""
    rng = random.Random(5)
    made = chain(kind)
    certs = pem(made.leaf)
    der = bytearray(
        made.leaf_key.private_bytes(serialization.Encoding.DER, fmt, serialization.NoEncryption())
    )
    rules = set()
    for _ in range(1000):
        damaged = bytearray(der)
        for _ in range(rng.randint(1, 3)):
            damaged[rng.randrange(len(damaged))] = rng.randrange(256)
        try:
            tls.parse_tls_certificate(certs, block(label, bytes(damaged)))
        except CryptoError as exc:
            rules.add(exc.rule)
    assert Rule.INVALID_PRIVATE_KEY in rules
    assert rules <= {
        Rule.INVALID_PRIVATE_KEY,
        Rule.PRIVATE_KEY_MISMATCH,
        Rule.UNSUPPORTED_KEY_TYPE,
        Rule.ENCRYPTED_PRIVATE_KEY,
    }


def test_inconsistent_rsa_key():
    """An RSA key whose private exponent does not fit its modulus fails the key check."""
    made = chain("rsa")
    assert isinstance(made.leaf_key, rsa.RSAPrivateKey)
    numbers = made.leaf_key.private_numbers()
    der = pkcs8(made.leaf_key)
    d = numbers.d.to_bytes((numbers.d.bit_length() + 7) // 8, "big")
    assert der.count(d) == 1
    bad_d = (numbers.d ^ 2).to_bytes(len(d), "big")
    assert key_error(block("PRIVATE KEY", der.replace(d, bad_d))) is Rule.INVALID_PRIVATE_KEY


def test_encrypted_keys_are_refused():
    made = chain()
    pkcs8_encrypted = key_pem(
        made.leaf_key,
        serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(b"secret"),
    )
    assert pkcs8_encrypted.startswith("-----BEGIN ENCRYPTED PRIVATE KEY-----")
    legacy = key_pem(
        made.leaf_key,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.BestAvailableEncryption(b"secret"),
    )
    assert "Proc-Type: 4,ENCRYPTED" in legacy
    # An encrypted PKCS #8 structure under the plain label is found on loading.
    relabelled = pkcs8_encrypted.replace("ENCRYPTED PRIVATE KEY", "PRIVATE KEY")
    for text in [pkcs8_encrypted, legacy, legacy.replace("\n", "\r\n"), relabelled]:
        assert key_error(text) is Rule.ENCRYPTED_PRIVATE_KEY
    assert "unencrypted" in error_of(pem(made.leaf), legacy).msg


@pytest.mark.parametrize(
    "key",
    [
        pytest.param(dsa_key, id="dsa"),
        pytest.param(ed448.Ed448PrivateKey.generate, id="ed448"),
        pytest.param(x25519.X25519PrivateKey.generate, id="x25519"),
        pytest.param(lambda: ec.generate_private_key(ec.SECP256K1()), id="secp256k1"),
    ],
)
def test_unsupported_key_types(key):
    assert key_error(key_pem(key())) is Rule.UNSUPPORTED_KEY_TYPE


def test_dsa_in_its_legacy_block():
    key = dsa_key()
    text = key_pem(key, serialization.PrivateFormat.TraditionalOpenSSL)
    assert text.startswith("-----BEGIN DSA PRIVATE KEY-----")
    assert key_error(text) is Rule.UNSUPPORTED_KEY_TYPE  # as in a PKCS #8 block


def test_rsa_key_size_bounds(monkeypatch):
    made = chain("rsa")
    monkeypatch.setattr(tls, "RSA_KEY_BITS", (3072, 8192))
    error = error_of(pem(made.leaf), key_pem(made.leaf_key))
    assert (error.rule, error.field) == (Rule.UNSUPPORTED_KEY_TYPE, "certificate_pem")
    assert "RSA with 2048 bits" in error.msg
    # The key is checked before it is matched: a small key is refused whatever the chain.
    other = chain("p256")
    error = error_of(pem(other.leaf), key_pem(made.leaf_key))
    assert (error.rule, error.field) == (Rule.UNSUPPORTED_KEY_TYPE, "private_key_pem")
    assert error.msg.startswith("The private key is RSA with 2048 bits")


def test_oversize_key():
    text = key_pem(key_of("p256"))
    assert key_error(text + " " * tls.MAX_KEY_CHARS) is Rule.FIELD_TOO_LONG


# -- Key and leaf ------------------------------------------------------------------------------


def test_a_key_that_does_not_belong_to_the_leaf():
    made = chain("p256")
    certs = pem(made.leaf, made.intermediate, made.root)
    for other in [key_of("p256", 2), key_of("rsa"), key_of("ed25519"), key_of("rsa", 1)]:
        error = error_of(certs, key_pem(other))
        assert (error.rule, error.field) == (Rule.PRIVATE_KEY_MISMATCH, "private_key_pem")


# A damaged serial may turn negative: a warning today (see test_a_zero_serial_number).
@pytest.mark.filterwarnings(
    "ignore:Parsed a serial number:cryptography.utils.CryptographyDeprecationWarning"
)
def test_damaged_leaves_only_ever_raise_crypto_errors():
    """Flip bytes all over a valid leaf: every outcome is a result or a rule."""
    rng = random.Random(11)
    made = chain(
        sans=[cx509.DNSName("a.example"), cx509.IPAddress(ipaddress.IPv4Address("192.0.2.1"))],
        usage=usage(digital_signature=True),
        ekus=[ExtendedKeyUsageOID.SERVER_AUTH, UNKNOWN_EKU],
    )
    der = bytearray(made.leaf.public_bytes(serialization.Encoding.DER))
    key = key_pem(made.leaf_key)
    rules = set()
    for _ in range(1500):
        damaged = bytearray(der)
        for _ in range(rng.randint(1, 3)):
            damaged[rng.randrange(len(damaged))] = rng.randrange(256)
        try:
            tls.parse_tls_certificate(block("CERTIFICATE", bytes(damaged)), key)
        except CryptoError as exc:
            rules.add(exc.rule)
    assert Rule.INVALID_CERTIFICATE in rules
    assert rules <= {
        Rule.INVALID_CERTIFICATE,
        Rule.PRIVATE_KEY_MISMATCH,
        Rule.UNSUPPORTED_KEY_TYPE,
    }


# -- Certificates issued here ------------------------------------------------------------------


@pytest.mark.parametrize("key_type", issuing.KEY_TYPES)
def test_issued_certificates_carry_the_same_fields(key_type):
    ca = issuing.new_ca("letsencrypt", NOT_BEFORE - timedelta(days=1))
    leaf = issuing.issue(
        ca.certificate_pem, ca.private_key_der, "app.example.com", key_type, NOT_BEFORE, NOT_AFTER
    )
    assert leaf.fields.subject_common_name == "app.example.com"
    assert leaf.fields.subject_alternative_names.as_api() == {
        "dns_names": ["app.example.com"],
        "ips": [],
    }
    assert leaf.fields.issuer_common_name == issuing.ca_common_name("letsencrypt")
    assert leaf.fields.private_key_type == key_type
    assert leaf.fields.extended_key_usages == ("server_auth",)
    assert "digital_signature" in leaf.fields.key_usages
    assert (leaf.fields.not_before, leaf.fields.not_after) == (NOT_BEFORE, NOT_AFTER)
    assert ca.fields.private_key_type == "ecdsa"
    assert ca.fields.key_usages == ("digital_signature", "key_cert_sign", "crl_sign")
    # The issued pair passes the upload checks with the same fields.
    key = serialization.load_der_private_key(leaf.private_key_der, password=None)
    uploaded = tls.parse_tls_certificate(leaf.certificate_pem + ca.certificate_pem, key_pem(key))
    assert uploaded.fields == leaf.fields
    assert uploaded.private_key_der == leaf.private_key_der


# -- openssl -----------------------------------------------------------------------------------


def run_openssl(*args: str) -> str:
    return subprocess.run(["openssl", *args], check=True, capture_output=True, text=True).stdout


@openssl
@pytest.mark.parametrize("serial", [0x0A, 0x00FF_0000_0000_0001, 2**159 - 3])
def test_openssl_reads_the_same_serial_subject_and_dates(tmp_path, serial):
    subject = name(
        (NameOID.COUNTRY_NAME, "NZ"),
        (NameOID.ORGANIZATION_NAME, "Example Ltd"),
        (NameOID.COMMON_NAME, "www.example.com"),
    )
    made = chain("rsa", subject=subject, serial=serial)
    parsed = tls.parse_tls_certificate(pem(made.leaf, made.intermediate), key_pem(made.leaf_key))
    path = tmp_path / "chain.pem"
    path.write_text(parsed.certificate_pem)  # openssl x509 reads the first: the leaf
    lines = run_openssl("x509", "-noout", "-serial", "-subject", "-dates", "-in", str(path))
    out = dict(line.split("=", 1) for line in lines.splitlines())
    # openssl prints whole bytes in uppercase (serial=0A); the API drops the leading zero.
    assert out["serial"] == out["serial"].upper()
    assert out["serial"].lower().lstrip("0") == parsed.fields.serial_number
    assert int(out["serial"], 16) == int(parsed.fields.serial_number, 16) == serial
    assert out["subject"].strip() == "C = NZ, O = Example Ltd, CN = www.example.com"
    stamp = "%b %d %H:%M:%S %Y GMT"
    assert datetime.strptime(out["notBefore"], stamp).replace(tzinfo=UTC) == (
        parsed.fields.not_before
    )
    assert datetime.strptime(out["notAfter"], stamp).replace(tzinfo=UTC) == (
        parsed.fields.not_after
    )


@openssl
@pytest.mark.parametrize("kind", ["rsa", "p384", "ed25519"])
def test_openssl_pairs_the_stored_key_with_the_leaf(tmp_path, kind):
    made = chain(kind)
    parsed = tls.parse_tls_certificate(pem(made.leaf), key_pem(made.leaf_key))
    (tmp_path / "leaf.pem").write_text(parsed.certificate_pem)
    (tmp_path / "key.der").write_bytes(parsed.private_key_der)
    from_cert = run_openssl("x509", "-noout", "-pubkey", "-in", str(tmp_path / "leaf.pem"))
    from_key = run_openssl("pkey", "-inform", "DER", "-pubout", "-in", str(tmp_path / "key.der"))
    assert from_cert == from_key
