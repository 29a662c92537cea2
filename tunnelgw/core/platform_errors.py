"""The platform profile's error catalog: each tunnelgw error code, and the platform's code,
HTTP status and message for the same failure where the platform documents one.

With the profile on (`TUNNELGW_PROFILE=platform`), an error is answered with the platform's
`error_code` (`ERR_NGROK_<n>`, the wire value the platform's clients branch on), its status
and a message in the platform's documented wording with the values filled in; tunnelgw's own
code stays in `details.tunnelgw_code`. A failure the platform documents no code for keeps
tunnelgw's code, status and message. A plain unknown id is the platform's 404 without an
`error_code`.

The rows are data (`platform_errors.yaml` beside this module), one per (tunnelgw code,
platform code). A row may apply only to some API families (the
first segment of the request path) and only when the error's details or context have given
values; the first row that applies wins, so specific rows come before a code's general one.
`status` is the platform's where a source shows it, or where the platform answers every
failure of its kind with one status (400 for conflicts, "already exists" and limits, 403 for
authentication: no 401 or 409 was ever observed from it); elsewhere the row keeps tunnelgw's
status (`basis` says which). docs/errors.md shows the table (a test keeps the two equal).
"""

from __future__ import annotations

import functools
import string
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

import yaml

from tunnelgw.core.errors import ApiError, Code

PROFILES = ("tunnelgw", "platform")
# The version header the platform's clients send; the profile accepts it as Service-Version.
VERSION_HEADER = "Ngrok-Version"
CODE_PREFIX = "ERR_NGROK_"
PAGE = "https://ngrok.com/docs/errors/err_ngrok_{}"
# Where a row's status comes from.
SOURCED = "sourced"  # a platform source shows this status for this code
PATTERN = "pattern"  # the platform answers every failure of this kind so (see the docstring)
KEPT = "kept"  # nothing shows the platform's status: tunnelgw's is kept
BASES = (SOURCED, PATTERN, KEPT)
NOT_FOUND_MSG = "Resource not found"
MASKED_LENGTH = 8


@dataclass(frozen=True, slots=True)
class PlatformCode:
    """The platform's answer for `code` (in `families`, when `when` holds)."""

    code: Code
    number: int | None  # None: the platform sends no error_code (a plain not-found)
    status: int
    template: str  # `{name}`: a detail or context value of the error; `{msg}`: tunnelgw's text
    basis: str
    families: tuple[str, ...] = ()
    when: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))

    @property
    def error_code(self) -> str | None:
        return None if self.number is None else f"{CODE_PREFIX}{self.number}"

    @property
    def url(self) -> str | None:
        return None if self.number is None else PAGE.format(self.number)

    def applies(self, family: str, values: Mapping[str, str]) -> bool:
        if self.families and family not in self.families:
            return False
        return all(values.get(key) == value for key, value in self.when.items())

    def message(self, values: Mapping[str, str]) -> str | None:
        """The template with `values` filled in; None when a value it names is missing."""
        try:
            return self.template.format_map(values)
        except (KeyError, IndexError, ValueError):
            return None


DATA_FILE = Path(__file__).resolve().parent / "platform_errors.yaml"


@functools.cache
def rows() -> tuple[PlatformCode, ...]:
    """Every row of the data file, in its order; ValueError for a malformed entry. Read at
    first need: a server without the profile never reads it."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    document = yaml.load(DATA_FILE.read_text(), Loader=loader)  # noqa: S506 - a safe loader
    found = []
    for entry in document["entries"]:
        try:
            code = Code[entry["code"]]
            number = entry["platform"]
            row = PlatformCode(
                code,
                None if number is None else int(number),
                int(entry["status"]),
                str(entry["message"]),
                str(entry["basis"]),
                tuple(str(family) for family in entry.get("families", ())),
                MappingProxyType({str(k): str(v) for k, v in entry.get("when", {}).items()}),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"{DATA_FILE.name}: bad entry {entry!r} ({exc})") from None
        if row.basis not in BASES:
            raise ValueError(f"{DATA_FILE.name}: bad basis in {entry!r}")
        found.append(row)
    return tuple(found)


@functools.cache
def _by_code() -> dict[Code, tuple[PlatformCode, ...]]:
    found: dict[Code, tuple[PlatformCode, ...]] = {}
    for row in rows():
        found[row.code] = (*found.get(row.code, ()), row)
    return found


def rows_of(code: Code) -> tuple[PlatformCode, ...]:
    """The catalog's rows for `code`, in order (none: the platform documents no code)."""
    return _by_code().get(code, ())


def family_of(path: str) -> str:
    """The API family of a request path: its first segment (`/reserved_domains/rd_1` is
    `reserved_domains`)."""
    return path.lstrip("/").split("/", 1)[0]


def lookup(error: ApiError, family: str) -> PlatformCode | None:
    """The row that answers `error` raised in `family`, if any."""
    candidates = _by_code().get(error.code)
    if not candidates:
        return None
    values = {**error.details, **error.context}
    for candidate in candidates:
        if candidate.applies(family, values):
            return candidate
    return None


def body(error: ApiError, operation_id: str, path: str) -> tuple[int, dict[str, object]]:
    """The status and error body of `error` under the platform profile."""
    details: dict[str, str] = {
        **error.details,
        "operation_id": operation_id,
        "tunnelgw_code": error.code.error_code,
    }
    found = lookup(error, family_of(path))
    if found is None:
        return error.code.status, {
            "error_code": error.code.error_code,
            "status_code": error.code.status,
            "msg": error.msg,
            "details": details,
        }
    msg = found.message({**error.details, **error.context, "msg": error.msg.rstrip(".")})
    answer: dict[str, object] = {"status_code": found.status, "msg": msg or error.msg}
    if found.error_code is not None:
        answer = {"error_code": found.error_code, **answer}
    answer["details"] = details
    return found.status, answer


def masked(credential: str) -> str:
    """A credential as a message may quote it: its first characters only (the platform's
    messages quote what was sent; the rest of a token stays out of bodies and logs)."""
    shown = credential[:MASKED_LENGTH]
    return shown + "..." if len(credential) > MASKED_LENGTH else shown


def placeholders(template: str) -> set[str]:
    """The names a template fills in."""
    return {name for _, name, _, _ in string.Formatter().parse(template) if name}


def error_codes() -> list[str]:
    """Every platform code the catalog answers with, in catalog order, once each."""
    return list(dict.fromkeys(row.error_code for row in rows() if row.error_code is not None))
