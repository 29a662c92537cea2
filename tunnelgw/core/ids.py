"""Resource ids: `<prefix>_` + 27 base62 characters, sorting in creation order.

The 27 characters encode 160 bits: a 48-bit millisecond timestamp, then 112 bits that are
random for the first id of a millisecond and incremented for the next ones in the same
process, so ids made by one process are strictly increasing. Base62 digits are in ASCII
order, so byte-wise comparison of ids (binary collation) is creation order.

Seeded mode (`seed`, `TUNNELGW_ID_SEED`, `tunnelgw serve --deterministic-ids`): for snapshot
tests, the same seed and the same sequence of calls in one process give the same ids, operation
ids, tokens and other random values that land in API responses (`random_source`). An id's
timestamp is then a simulated millisecond counter (from `SEEDED_EPOCH_MS`, +1 per id) and
each kind of value comes from a PRNG of its own derived from the seed, so extra calls of one
kind (health checks make operation ids) do not shift the others. Key material (private keys,
the KEK, AES-GCM nonces) never comes from here: it stays truly random. Seeded values are
predictable from the seed: never seed a server that holds anything real.
"""

from __future__ import annotations

import hashlib
import random
import re
import secrets
import threading
import time
from dataclasses import dataclass, field

ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
BODY_LENGTH = 27
_RANDOM_BITS = 112
_BODY = re.compile(r"[0-9A-Za-z]{27}")

_lock = threading.Lock()
_last = 0
_BYTE_TO_BASE62 = bytes(ord(ALPHABET[byte % 62]) for byte in range(256))
# Operation ids need uniqueness, not secrecy: a seeded PRNG, not a system call per request.
_operation_random = random.Random(secrets.randbits(128))  # noqa: S311
_system_random = random.SystemRandom()

# Seeded mode: the first id's simulated timestamp is 2026-01-01T00:00:00.001Z.
SEEDED_EPOCH_MS = 1_767_225_600_000


@dataclass
class _Seeded:
    value: str
    ms: int = SEEDED_EPOCH_MS
    streams: dict[str, random.Random] = field(default_factory=dict)

    def stream(self, name: str) -> random.Random:
        found = self.streams.get(name)
        if found is None:
            digest = hashlib.sha256(f"tunnelgw-ids\0{name}\0{self.value}".encode()).digest()
            found = self.streams[name] = random.Random(int.from_bytes(digest))  # noqa: S311
        return found


_seeded: _Seeded | None = None


def seed(value: str | int | None) -> None:
    """Enter seeded mode with `value` (its text: 42 and "42" are one seed), restarting the
    sequence; None returns to random ids. Process-wide; ids made before seeding may sort
    after the seeded ones, so seed before making any (the server does, at start)."""
    global _seeded, _last
    with _lock:
        if value is None:
            _seeded = None  # `_last` stays: unseeded ids keep increasing
        else:
            _seeded = _Seeded(str(value))
            _last = 0


def current_seed() -> str | None:
    """The seed of seeded mode, or None."""
    state = _seeded
    return state.value if state is not None else None


def ensure_seeded(value: str | None) -> None:
    """`seed(value)` unless this process already runs with that seed (an app starting in a
    process the CLI seeded continues its sequence); None or "" changes nothing."""
    if value is not None and value != "" and current_seed() != value:
        seed(value)


def random_source(stream: str) -> random.Random:
    """Where random values that land in API responses (DNS targets, ports, certificate
    serial numbers) come from: the system's CSPRNG, or in seeded mode the PRNG of `stream`
    (one per kind of value). Not for key material."""
    state = _seeded
    if state is None:
        return _system_random
    with _lock:
        return state.stream(stream)


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


def _next_value(count: int = 1) -> int:
    """The first of `count` consecutive values, each greater than every one made before (in
    seeded mode, `count` is 1)."""
    global _last
    with _lock:
        state = _seeded
        if state is None:
            now_ms = time.time_ns() // 1_000_000
            bits = secrets.randbits(_RANDOM_BITS - 1)
        else:
            state.ms += 1  # a simulated millisecond per id: every candidate beats the last
            now_ms = state.ms
            bits = state.stream("ids").getrandbits(_RANDOM_BITS - 1)
        candidate = (now_ms << _RANDOM_BITS) | bits
        # Same millisecond (or a clock step back): keep increasing from the last value.
        first = candidate if candidate > _last else _last + 1
        _last = first + count - 1
        return first


def new_id(prefix: str) -> str:
    """A fresh id with `prefix`, greater than every id this process made before (since it
    was last seeded)."""
    return f"{prefix}_{encode_base62(_next_value(), BODY_LENGTH)}"


# The last 4 digits of an id, which consecutive ones differ in (unless they carry).
_TAIL = 4
_TAIL_BASE = _PAIR_BASE * _PAIR_BASE


def new_ids(prefix: str, count: int) -> list[str]:
    """`count` fresh ids with `prefix`, increasing: the ids of `count` calls of `new_id`
    (consecutive values, as `new_id` makes within a millisecond), encoded at a fraction of
    their cost."""
    if _seeded is not None:
        return [new_id(prefix) for _ in range(count)]  # a random draw and millisecond each
    start = prefix + "_"
    return [start + body for body in _bodies(_next_value(count), count)]


def new_id_and_ids(prefix: str, then: str, count: int) -> tuple[str, list[str]]:
    """A fresh id with `prefix` and `count` with prefix `then` right after it: what
    `new_id(prefix)` then `new_ids(then, count)` make (an event and its deliveries), from one
    draw of the sequence."""
    if _seeded is not None:
        return new_id(prefix), new_ids(then, count)
    first, *rest = _bodies(_next_value(count + 1), count + 1)
    start = then + "_"
    return f"{prefix}_{first}", [start + body for body in rest]


def _bodies(first: int, count: int) -> list[str]:
    """The base62 bodies of the values `first` to `first + count - 1`: their head (all but the
    last 4 digits) encoded once."""
    high, low = divmod(first, _TAIL_BASE)
    if low + count > _TAIL_BASE:  # the tail carries into the head: seldom
        return [encode_base62(first + k, BODY_LENGTH) for k in range(count)]
    head = encode_base62(high, BODY_LENGTH - _TAIL)
    pairs, base = _PAIRS, _PAIR_BASE
    return [head + pairs[value // base] + pairs[value % base] for value in range(low, low + count)]


def new_operation_id(*, probe: bool = False) -> str:
    """A fresh `op_` id for a request: 27 random base62 characters (it names a request and
    orders nothing; a byte per character, slightly biased, ~160 bits). In seeded mode the
    `probe` requests (health checks, metrics scrapes: made at moments that depend on timing)
    draw from a stream of their own, so they do not shift the other requests' ids."""
    if _seeded is None:
        source = _operation_random
    else:
        source = random_source("probe_operations" if probe else "operations")
    return "op_" + source.randbytes(BODY_LENGTH).translate(_BYTE_TO_BASE62).decode()


def new_secret(length: int = 43) -> str:
    """A random base62 string (43 characters carry 256 bits): API key tokens."""
    source = random_source("secrets")
    return "".join(source.choice(ALPHABET) for _ in range(length))


def is_valid(value: str, prefix: str) -> bool:
    """Whether `value` is a well-formed id with `prefix`."""
    head, sep, body = value.partition("_")
    return bool(sep) and head == prefix and _BODY.fullmatch(body) is not None


def prefix_of(value: str) -> str | None:
    """The prefix of a well-formed id, else None."""
    head, sep, body = value.partition("_")
    return head if sep and head.isalpha() and _BODY.fullmatch(body) else None
