"""Resource ids: `<prefix>_` + 27 base62 characters, sorting in creation order.

The 27 characters encode 160 bits: a 48-bit millisecond timestamp, then 112 bits that are
random for the first id of a millisecond and incremented for the next ones in the same
process, so ids made by one process are strictly increasing. Base62 digits are in ASCII
order, so byte-wise comparison of ids (binary collation) is creation order.
"""

from __future__ import annotations

import random
import re
import secrets
import threading
import time

ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
BODY_LENGTH = 27
_RANDOM_BITS = 112
_BODY = re.compile(r"[0-9A-Za-z]{27}")

_lock = threading.Lock()
_last = 0
_BYTE_TO_BASE62 = bytes(ord(ALPHABET[byte % 62]) for byte in range(256))
# Operation ids need uniqueness, not secrecy: a seeded PRNG, not a system call per request.
_operation_random = random.Random(secrets.randbits(128))  # noqa: S311


# Two base62 digits per step: half the divisions of digit-by-digit encoding.
_PAIRS = [high + low for high in ALPHABET for low in ALPHABET]
_PAIR_BASE = 62 * 62


def encode_base62(value: int, length: int) -> str:
    """`value` as exactly `length` base62 digits (most significant first)."""
    parts = []
    for _ in range(length // 2):
        value, rem = divmod(value, _PAIR_BASE)
        parts.append(_PAIRS[rem])
    if length % 2:
        value, rem = divmod(value, 62)
        parts.append(ALPHABET[rem])
    if value:
        raise ValueError("value does not fit")
    return "".join(reversed(parts))


def _next_value(now_ms: int) -> int:
    global _last
    with _lock:
        candidate = (now_ms << _RANDOM_BITS) | secrets.randbits(_RANDOM_BITS - 1)
        # Same millisecond (or a clock step back): keep increasing from the last value.
        _last = candidate if candidate > _last else _last + 1
        return _last


def new_id(prefix: str) -> str:
    """A fresh id with `prefix`, greater than every id this process made before."""
    return f"{prefix}_{encode_base62(_next_value(time.time_ns() // 1_000_000), BODY_LENGTH)}"


def new_operation_id() -> str:
    """A fresh `op_` id for a request: 27 random base62 characters (it names a request and
    orders nothing; a byte per character, slightly biased, ~160 bits)."""
    return "op_" + _operation_random.randbytes(BODY_LENGTH).translate(_BYTE_TO_BASE62).decode()


def new_secret(length: int = 43) -> str:
    """A random base62 string (43 characters carry 256 bits)."""
    return "".join(secrets.choice(ALPHABET) for _ in range(length))


def is_valid(value: str, prefix: str) -> bool:
    """Whether `value` is a well-formed id with `prefix`."""
    head, sep, body = value.partition("_")
    return bool(sep) and head == prefix and _BODY.fullmatch(body) is not None


def prefix_of(value: str) -> str | None:
    """The prefix of a well-formed id, else None."""
    head, sep, body = value.partition("_")
    return head if sep and head.isalpha() and _BODY.fullmatch(body) else None
