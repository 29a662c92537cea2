"""SSH certificate authorities, user and host certificates (OpenSSH certificate format).

Generates CA key pairs, renders public keys in authorized-keys form, checks public keys,
critical options, host principals and validity periods, and signs user and host certificates
with `cryptography`'s `SSHCertificateBuilder` (RSA CAs sign with rsa-sha2-512). Invalid input
raises `CryptoError`.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

from tunnelgw.core import ids, timefmt
from tunnelgw.crypto import CryptoError, Rule

CaPrivateKey = ed25519.Ed25519PrivateKey | ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey
UserKey = ed25519.Ed25519PublicKey | ec.EllipticCurvePublicKey | rsa.RSAPublicKey
_CA_KEY_CLASSES = (ed25519.Ed25519PrivateKey, ec.EllipticCurvePrivateKey, rsa.RSAPrivateKey)
_USER_KEY_CLASSES = (ed25519.Ed25519PublicKey, ec.EllipticCurvePublicKey, rsa.RSAPublicKey)

# CA key generation: API names, sizes and curves, and the defaults of unset fields.
KEY_TYPES = ("rsa", "ecdsa", "ed25519")
DEFAULT_KEY_TYPE = "ed25519"
RSA_KEY_SIZES = (2048, 4096)
DEFAULT_RSA_KEY_SIZE = 4096
CURVES: dict[str, type[ec.EllipticCurve]] = {
    "p256": ec.SECP256R1,
    "p384": ec.SECP384R1,
    "p521": ec.SECP521R1,
}
DEFAULT_CURVE = "p256"

# User keys that can be certified: SSH algorithm name -> API key type.
USER_KEY_ALGORITHMS = {
    "ssh-ed25519": "ed25519",
    "ecdsa-sha2-nistp256": "ecdsa",
    "ecdsa-sha2-nistp384": "ecdsa",
    "ecdsa-sha2-nistp521": "ecdsa",
    "ssh-rsa": "rsa",
}
RSA_USER_KEY_BITS = (1024, 16384)  # OpenSSH's own bounds

CRITICAL_OPTIONS = ("force-command", "source-address")
DEFAULT_EXTENSIONS = {"permit-pty": "", "permit-user-rc": ""}
DEFAULT_VALIDITY = timedelta(hours=24)  # user certificates
# Host certificates: "one year" as the platform documents it, taken as 365 days.
DEFAULT_HOST_VALIDITY = timedelta(days=365)
# SSH times are unsigned seconds since 1970; RFC 3339 ends at year 9999.
EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)
LATEST = datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class CaKeySpec:
    """What CA key to generate: `key_type` and its size (rsa) or curve (ecdsa)."""

    key_type: str
    key_size: int | None = None
    curve: str | None = None


def ca_key_spec(
    private_key_type: str | None, elliptic_curve: str | None, key_size: int | None
) -> CaKeySpec:
    """The key to generate; `None`, `""` and `0` are unset. Raises CryptoError(INVALID_FIELD)
    for unknown values and for a size or curve given with a type that does not take it."""
    key_type = private_key_type or DEFAULT_KEY_TYPE
    if key_type not in KEY_TYPES:
        raise _invalid("private_key_type", f"must be one of {', '.join(KEY_TYPES)}")
    if key_size and key_type != "rsa":
        raise _invalid("key_size", f"applies only to private_key_type rsa, not {key_type}")
    if key_size and key_size not in RSA_KEY_SIZES:
        raise _invalid("key_size", "must be 2048 or 4096")
    if elliptic_curve and key_type != "ecdsa":
        raise _invalid("elliptic_curve", f"applies only to private_key_type ecdsa, not {key_type}")
    if elliptic_curve and elliptic_curve not in CURVES:
        raise _invalid("elliptic_curve", f"must be one of {', '.join(CURVES)}")
    if key_type == "rsa":
        return CaKeySpec(key_type, key_size=key_size or DEFAULT_RSA_KEY_SIZE)
    if key_type == "ecdsa":
        return CaKeySpec(key_type, curve=elliptic_curve or DEFAULT_CURVE)
    return CaKeySpec(key_type)


def _invalid(field: str, problem: str) -> CryptoError:
    return CryptoError(Rule.INVALID_FIELD, f"{field} {problem}.", field=field)


def generate_ca_key(spec: CaKeySpec) -> CaPrivateKey:
    """A new private key as `spec` says (RSA 4096 takes about half a second)."""
    if spec.key_type == "rsa":
        return rsa.generate_private_key(public_exponent=65537, key_size=spec.key_size or 0)
    if spec.key_type == "ecdsa":
        return ec.generate_private_key(CURVES[spec.curve or DEFAULT_CURVE]())
    return ed25519.Ed25519PrivateKey.generate()


def public_key_line(key: UserKey) -> str:
    """The public key in authorized-keys form, without a comment (`ssh-ed25519 AAAA...`)."""
    return key.public_bytes(
        serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
    ).decode("ascii")


def private_key_bytes(key: CaPrivateKey) -> bytes:
    """The private key as unencrypted PKCS #8 DER: to be wrapped, never stored as is."""
    return key.private_bytes(
        serialization.Encoding.DER,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def load_ca_key(der: bytes) -> CaPrivateKey:
    """The CA private key from `private_key_bytes` output."""
    key = serialization.load_der_private_key(der, password=None)
    if not isinstance(key, _CA_KEY_CLASSES):
        raise TypeError(f"not an SSH CA key: {type(key).__name__}")
    return key


@dataclass(frozen=True, slots=True)
class UserPublicKey:
    """A user public key that can be certified: the key, its API type, its canonical line."""

    key: UserKey
    key_type: str
    line: str


def parse_user_public_key(text: str) -> UserPublicKey:
    """The key of an authorized-keys line `<type> <base64> [comment]` (comment dropped).

    Raises CryptoError: UNSUPPORTED_SSH_KEY_TYPE for FIDO `sk-*` keys, DSA keys and
    certificates; INVALID_SSH_PUBLIC_KEY for anything else that is not an RSA (1024 to 16384
    bits), ECDSA or Ed25519 public key.
    """
    fields = text.strip().split(maxsplit=2)
    if len(fields) < 2 or "\n" in text.strip() or "\r" in text.strip():
        raise _bad_key("expected one line '<type> <base64 key> [comment]'")
    algorithm, blob = fields[0], fields[1]
    _check_algorithm(algorithm)
    try:
        key = serialization.load_ssh_public_key(f"{algorithm} {blob}".encode("ascii"))
    except (ValueError, UnsupportedAlgorithm, NotImplementedError):  # compressed EC points
        raise _bad_key(f"the {algorithm} key data is not valid") from None
    if isinstance(key, rsa.RSAPublicKey) and not (
        RSA_USER_KEY_BITS[0] <= key.key_size <= RSA_USER_KEY_BITS[1]
    ):
        raise _bad_key(f"RSA keys must have 1024 to 16384 bits, not {key.key_size}")
    if not isinstance(key, _USER_KEY_CLASSES):  # pragma: no cover - the algorithm check
        raise _bad_key(f"unexpected key {type(key).__name__}")
    return UserPublicKey(key, USER_KEY_ALGORITHMS[algorithm], public_key_line(key))


def _check_algorithm(algorithm: str) -> None:
    if algorithm in USER_KEY_ALGORITHMS:
        return
    if algorithm.startswith("sk-"):
        reason = "FIDO security-key (sk-*) keys cannot be certified here"
    elif algorithm.endswith("-cert-v01@openssh.com"):
        reason = "that is a certificate; send the public key it certifies"
    elif algorithm == "ssh-dss":
        reason = "DSA keys are not supported (OpenSSH disabled them)"
    else:
        raise _bad_key(f"unknown key type {algorithm[:64]!r}")
    raise CryptoError(
        Rule.UNSUPPORTED_SSH_KEY_TYPE,
        f"public_key: {reason}; use ed25519, ecdsa or rsa.",
        field="public_key",
    )


def _bad_key(problem: str) -> CryptoError:
    return CryptoError(Rule.INVALID_SSH_PUBLIC_KEY, f"public_key: {problem}.", field="public_key")


def source_addresses(value: str) -> str:
    """`value` if it is a comma-separated list of IP addresses or CIDR networks (host bits
    zero, no spaces), as OpenSSH's `source-address` takes it; raises CryptoError."""
    for item in value.split(","):
        try:
            if "%" in item or item.strip() != item:
                raise ValueError(item)
            ipaddress.ip_network(item, strict=True)
        except ValueError:
            raise CryptoError(
                Rule.INVALID_FIELD,
                f"critical_options.source-address: {item[:64]!r} is not an IP address or "
                "CIDR network (comma-separated, no spaces, host bits zero).",
                field="critical_options.source-address",
            ) from None
    return value


def critical_options(options: Mapping[str, str]) -> dict[str, str]:
    """The options to sign: only `force-command` and `source-address`; empty values are
    dropped (unset). Raises CryptoError(INVALID_FIELD)."""
    result: dict[str, str] = {}
    for name, value in options.items():
        if name not in CRITICAL_OPTIONS:
            raise _invalid(f"critical_options.{name[:64]}", "is not a supported critical option")
        if value:
            result[name] = source_addresses(value) if name == "source-address" else value
    return result


def parse_instant(text: str, field: str) -> datetime:
    """An RFC 3339 date-time as aware UTC, fractions of a second dropped.

    Raises CryptoError: INVALID_FIELD if malformed, INVALID_VALIDITY outside 1970..9999.
    """
    try:
        parsed = timefmt.parse_rfc3339(text)
    except ValueError:
        raise CryptoError(
            Rule.INVALID_FIELD,
            f"{field} is not an RFC 3339 date-time (such as 2026-11-21T10:11:14Z; an offset is "
            "-23:59 to +23:59).",
            field=field,
        ) from None
    instant: datetime | None
    try:
        instant = parsed.astimezone(UTC).replace(microsecond=0)
    except OverflowError:  # before year 1 or after year 9999 in UTC
        instant = None
    if instant is None or not EARLIEST <= instant <= LATEST:
        raise CryptoError(
            Rule.INVALID_VALIDITY,
            f"{field} must be between 1970-01-01T00:00:00Z and 9999-12-31T23:59:59Z.",
            field=field,
        )
    return instant


def validity(
    valid_after: str | None,
    valid_until: str | None,
    now: datetime,
    default: timedelta = DEFAULT_VALIDITY,
) -> tuple[datetime, datetime]:
    """(valid_after, valid_until): defaults `now` and valid_after + `default` (24 h for user
    certificates; at most the end of 9999); `None` and `""` are unset. Raises CryptoError
    unless valid_after < valid_until."""
    after = parse_instant(valid_after, "valid_after") if valid_after else now
    if valid_until:
        until = parse_instant(valid_until, "valid_until")
    else:
        until = after + default if LATEST - after >= default else LATEST
    if until <= after:
        raise CryptoError(
            Rule.INVALID_VALIDITY,
            "valid_until must be later than valid_after (default: the current time).",
            field="valid_until",
        )
    return after, until


def new_serial() -> int:
    """A random 64-bit certificate serial number (repeatable in seeded mode)."""
    return ids.random_source("serials").getrandbits(64)


@dataclass(frozen=True, slots=True)
class CertificateRequest:
    """Everything a certificate states besides the key it certifies and its type."""

    key_id: str
    serial: int
    principals: Sequence[str]  # empty: valid for every user (or host)
    critical_options: Mapping[str, str]  # user certificates only
    extensions: Mapping[str, str]  # user certificates only
    valid_after: datetime
    valid_until: datetime


# The certificate types (`CertificateType` values): what `sign_certificate` makes.
USER = serialization.SSHCertificateType.USER
HOST = serialization.SSHCertificateType.HOST


def sign_certificate(
    ca_key: CaPrivateKey,
    key: UserKey,
    req: CertificateRequest,
    cert_type: serialization.SSHCertificateType = USER,
) -> str:
    """The signed certificate of `key`, of type `cert_type` (USER or HOST), in authorized-keys
    form (`<type>-cert-v01@openssh.com ...`). `valid_until` is the certificate's (exclusive)
    `valid_before`. OpenSSH defines no critical options or extensions for host certificates:
    a HOST request must carry none (ValueError)."""
    if cert_type is HOST and (req.critical_options or req.extensions):
        raise ValueError("host certificates carry no critical options or extensions")
    builder = (
        serialization.SSHCertificateBuilder()
        .public_key(key)
        .type(cert_type)
        .serial(req.serial)
        .key_id(req.key_id.encode("utf-8"))
        .valid_after(int(req.valid_after.timestamp()))
        .valid_before(int(req.valid_until.timestamp()))
    )
    if req.principals:
        builder = builder.valid_principals([name.encode("utf-8") for name in req.principals])
    else:
        builder = builder.valid_for_all_principals()  # type: ignore[no-untyped-call]
    for name, value in sorted(req.critical_options.items()):
        builder = builder.add_critical_option(name.encode("utf-8"), value.encode("utf-8"))
    for name, value in sorted(req.extensions.items()):
        builder = builder.add_extension(name.encode("utf-8"), value.encode("utf-8"))
    return builder.sign(ca_key).public_bytes().decode("ascii")
