"""Resource ids: `<prefix>_` + 27 base62 characters, sorting in creation order.

The 27 characters encode 160 bits: a 48-bit millisecond timestamp, then 112 bits that are
random for the first id of a millisecond and incremented for the next ones in the same
process, so ids made by one process are strictly increasing (and those of several processes
do not meet: each starts a millisecond at its own random point, a forked child too). An id
made in the same millisecond as another thus tells the ones after it: ids name resources,
and no access rests on one being unguessed. Base62 digits are in ASCII order, so byte-wise
comparison of ids (binary collation) is creation order.

Seeded mode (`seed`, `TUNNELGW_ID_SEED`, `tunnelgw serve --deterministic-ids`): for snapshot
tests, the same seed and the same sequence of calls in one process give the same ids, operation
ids, tokens and other random values that land in API responses (`random_source`). An id's
timestamp is then a simulated millisecond counter (from `SEEDED_EPOCH_MS`, +1 per id; ids
reserved by another, `new_id(reserve=)`, are in its millisecond) and
each kind of value comes from a PRNG of its own derived from the seed, so extra calls of one
kind (health checks make operation ids) do not shift the others. Key material (private keys,
the KEK, AES-GCM nonces) never comes from here: it stays truly random. Seeded values are
predictable from the seed: never seed a server that holds anything real.
"""

from __future__ import annotations

import functools
import hashlib
import os
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


def _forget_last() -> None:
    """In a forked child: its ids start from a draw of their own (the parent's next ids in
    the millisecond of the fork follow its last one: so would the child's)."""
    global _last, _lock
    _lock = threading.Lock()
    _last = 0


os.register_at_fork(after_in_child=_forget_last)
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
_DIGIT_VALUES = {char: value for value, char in enumerate(ALPHABET)}


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
    seeded mode too: one simulated millisecond and one random draw for all of them)."""
    global _last
    with _lock:
        state = _seeded
        if state is None:
            now_ms = time.time_ns() // 1_000_000
            if now_ms <= _last >> _RANDOM_BITS:  # the same millisecond (or a clock step back)
                first = _last + 1
            else:
                first = (now_ms << _RANDOM_BITS) | secrets.randbits(_RANDOM_BITS - 1)
        else:
            state.ms += 1  # a simulated millisecond per draw: always a new one
            first = (state.ms << _RANDOM_BITS) | state.stream("ids").getrandbits(_RANDOM_BITS - 1)
            first = max(first, _last + 1)
        _last = first + count - 1
        return first


def new_id(prefix: str, *, reserve: int = 0) -> str:
    """A fresh id with `prefix`, greater than every id this process made before (since it
    was last seeded). `reserve`: the values of the next `reserve` ids are kept for ids
    derived from this one (`following`: an event's deliveries), and no later id takes them."""
    return f"{prefix}_{_body(_next_value(reserve + 1))}"


def decode_base62(digits: str) -> int:
    """The value of base62 `digits` (most significant first)."""
    value = 0
    for char in digits:
        value = value * 62 + _DIGIT_VALUES[char]
    return value


# The last 4 digits of an id, which consecutive ones differ in (unless they carry).
_TAIL = 4
_TAIL_BASE = _PAIR_BASE * _PAIR_BASE


def following(id_: str, prefix: str, count: int) -> list[str]:
    """The ids with `prefix` of the `count` values right after `id_`'s, increasing: those a
    `new_id(..., reserve=count)` that made `id_` kept for them."""
    start = prefix + "_"
    first = decode_base62(id_.partition("_")[2]) + 1
    return [start + body for body in _bodies(first, count)]


@functools.lru_cache(maxsize=1)
def _head(high: int) -> str:
    """All but the last 4 digits of the values `high * 62**4` to `(high + 1) * 62**4 - 1`,
    encoded once for the values that share them: the ids made in one millisecond mostly do
    (bench/README.md, issue 31)."""
    return encode_base62(high, BODY_LENGTH - _TAIL)


def _body(value: int) -> str:
    """The base62 body of the id of `value`."""
    high, low = divmod(value, _TAIL_BASE)
    return _head(high) + _PAIRS[low // _PAIR_BASE] + _PAIRS[low % _PAIR_BASE]


def _bodies(first: int, count: int) -> list[str]:
    """The base62 bodies of the values `first` to `first + count - 1`: their head (all but the
    last 4 digits) encoded once."""
    high, low = divmod(first, _TAIL_BASE)
    if low + count > _TAIL_BASE:  # the tail carries into the head: seldom
        return [_body(first + k) for k in range(count)]
    head = _head(high)
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
