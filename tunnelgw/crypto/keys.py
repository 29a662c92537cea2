"""The key-encryption key (KEK) and the private keys wrapped under it (AES-256-GCM).

The KEK is `TUNNELGW_KEY_ENCRYPTION_KEY` (urlsafe base64 of 32 random bytes), or else the
file `<data dir>/key-encryption-key`, created with mode 0600 on the first start. Servers that
share one database must share the KEK: set the variable on each. A wrapped key is
`version (1 byte) || nonce (12) || ciphertext and tag`, with the owning row's id as
associated data, so a blob copied onto another row does not decrypt.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import logging
import os
import tempfile
from contextvars import ContextVar, Token
from pathlib import Path

from tunnelgw.core.settings import Settings

KEK_FILE = "key-encryption-key"
KEK_BYTES = 32
_VERSION = b"\x01"
_NONCE_BYTES = 12

log = logging.getLogger("tunnelgw.keys")


class KekError(Exception):
    """The configured or stored KEK is not urlsafe base64 of 32 bytes."""


class UnwrapError(Exception):
    """A wrapped key does not decrypt: another KEK, another row, or a damaged blob."""


def decode_kek(text: str) -> bytes:
    """The 32 KEK bytes of `text` (urlsafe base64, padding optional); raises KekError."""
    stripped = text.strip()
    try:
        padded = stripped + "=" * (-len(stripped) % 4)
        key = base64.b64decode(padded, altchars=b"-_", validate=True)
    except (binascii.Error, ValueError):
        raise KekError("the key-encryption key is not urlsafe base64") from None
    if len(key) != KEK_BYTES:
        raise KekError(f"the key-encryption key must be {KEK_BYTES} bytes, not {len(key)}")
    return key


def encode_kek(key: bytes) -> str:
    return base64.urlsafe_b64encode(key).decode("ascii")


def new_kek() -> str:
    """A fresh KEK in its configuration form (for `TUNNELGW_KEY_ENCRYPTION_KEY`)."""
    return encode_kek(os.urandom(KEK_BYTES))


def load_or_create_kek(settings: Settings) -> bytes:
    """The KEK: from the settings, else from the data directory's file (created if absent).

    Raises KekError for a malformed key, naming where it came from.
    """
    if settings.key_encryption_key is not None:
        try:
            return decode_kek(settings.key_encryption_key.get_secret_value())
        except KekError as exc:
            raise KekError(f"TUNNELGW_KEY_ENCRYPTION_KEY: {exc}") from None
    path = settings.data_dir / KEK_FILE
    if not path.exists():
        _create(path)
    elif path.stat().st_mode & 0o077:
        log.warning("%s is readable by other users; chmod 600 it", path)
    try:
        return decode_kek(path.read_text(encoding="ascii", errors="replace"))
    except KekError as exc:
        raise KekError(f"{path}: {exc}") from None


def _create(path: Path) -> None:
    """Write a new KEK to `path` (mode 0600) unless another process just did."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".kek-")  # mode 0600
    try:
        with os.fdopen(fd, "w", encoding="ascii") as fh:
            fh.write(new_kek() + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        # A hard link publishes the complete file atomically and never replaces one; if
        # another process created it first, everyone uses that one.
        with contextlib.suppress(FileExistsError):
            os.link(tmp, path)
    finally:
        os.unlink(tmp)


def wrap(kek: bytes, plaintext: bytes, associated_data: bytes) -> bytes:
    """`plaintext` encrypted and authenticated under `kek`, bound to `associated_data`."""
    nonce = os.urandom(_NONCE_BYTES)
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM  # loaded at first use

    return _VERSION + nonce + AESGCM(kek).encrypt(nonce, plaintext, associated_data)


def unwrap(kek: bytes, blob: bytes, associated_data: bytes) -> bytes:
    """The plaintext of a `wrap` result; raises UnwrapError if it does not authenticate."""
    if blob[:1] != _VERSION:
        raise UnwrapError("unknown wrapped-key format")
    nonce, sealed = blob[1 : 1 + _NONCE_BYTES], blob[1 + _NONCE_BYTES :]
    from cryptography.exceptions import InvalidTag
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM  # loaded at first use

    try:
        return AESGCM(kek).decrypt(nonce, sealed, associated_data)
    except (InvalidTag, ValueError):
        raise UnwrapError("the wrapped key does not decrypt with this KEK") from None


class Kek:
    """The KEK of one app: loaded from its settings when the app starts, or at first use."""

    __slots__ = ("_key", "settings")

    def __init__(self, settings: Settings, key: bytes | None = None) -> None:
        self.settings = settings
        self._key = key

    def get(self) -> bytes:
        if self._key is None:
            self._key = load_or_create_kek(self.settings)
        return self._key


# The KEK of the app serving the current request (set by tunnelgw.http for each request), and
# the process default for code outside requests (scripts, tests).
_active: ContextVar[Kek | None] = ContextVar("tunnelgw_kek", default=None)
_default: bytes | None = None


def init(settings: Settings) -> bytes:
    """Load (or create) the KEK of `settings` and make it the process default (for code
    outside requests: scripts, tests); apps hold their own (tunnelgw.http.state)."""
    return use(load_or_create_kek(settings))


def use(kek: bytes) -> bytes:
    """Make `kek` the process default."""
    global _default
    _default = kek
    return kek


def activate(kek: Kek) -> Token[Kek | None]:
    """Make `kek` the current one for this task (and the tasks it starts)."""
    return _active.set(kek)


def deactivate(token: Token[Kek | None]) -> None:
    _active.reset(token)


def current() -> bytes:
    """The KEK of the app serving the current request; outside a request the process
    default."""
    active = _active.get()
    if active is not None:
        return active.get()
    if _default is None:
        raise RuntimeError("key-encryption key not initialised")
    return _default


# --- sealing for snapshots ------------------------------------------------------------------
# A snapshot's secrets are sealed with AES-SIV (RFC 5297, deterministic authenticated
# encryption, made for key wrapping) under a key derived from the KEK: the same secret of the
# same row seals to the same text, so two snapshots of one state are byte-identical.

_SEAL_INFO = b"tunnelgw snapshot seal v1"
_FINGERPRINT_INFO = b"tunnelgw kek fingerprint v1"


def _derived(kek: bytes, info: bytes, length: int) -> bytes:
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.kdf.hkdf import HKDF  # loaded at first use

    return HKDF(hashes.SHA256(), length, salt=None, info=info).derive(kek)


def fingerprint(kek: bytes) -> str:
    """A public name of `kek` (hex, 128 bits derived one-way): equal for equal KEKs."""
    return _derived(kek, _FINGERPRINT_INFO, 16).hex()


def seal(kek: bytes, plaintext: bytes, associated_data: bytes) -> bytes:
    """`plaintext` sealed deterministically under `kek`, bound to `associated_data`."""
    from cryptography.hazmat.primitives.ciphers.aead import AESSIV  # loaded at first use

    return AESSIV(_derived(kek, _SEAL_INFO, 64)).encrypt(plaintext, [associated_data])


def unseal(kek: bytes, sealed: bytes, associated_data: bytes) -> bytes:
    """The plaintext of a `seal` result; raises UnwrapError if it does not authenticate."""
    from cryptography.exceptions import InvalidTag
    from cryptography.hazmat.primitives.ciphers.aead import AESSIV  # loaded at first use

    try:
        return AESSIV(_derived(kek, _SEAL_INFO, 64)).decrypt(sealed, [associated_data])
    except (InvalidTag, ValueError):
        raise UnwrapError("the sealed value does not decrypt with this KEK") from None
