"""The request journal calls of `TunnelgwServer` (tunnelgw.testing.server): the requests the
server's account made, and `verify`, which fails with what was recorded when a count is not
what the test expected. Only the standard library is imported here at import time."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any
from urllib.parse import urlencode

from tunnelgw.testing import inputs

# How many recorded requests a failed verify shows.
SHOWN = 25
EMPTY = "The journal is empty: were the requests sent to this server with its token?"


class VerificationError(AssertionError):
    """`verify` found another number of matching requests than expected. The message lists
    the account's recorded requests and, for each, what kept it from matching."""


class JournalCalls:
    """The request journal of one server's account (the admin API's `/_admin/requests`); the
    server class provides `_admin` (one request, an error status raised as TunnelgwError)."""

    def _admin(self, method: str, path: str, body: Any = None) -> Any:  # pragma: no cover
        raise NotImplementedError

    def requests(
        self,
        operation: str | None = None,
        *,
        method: str | None = None,
        path_prefix: str | None = None,
        status: int | str | None = None,
        error_code: str | None = None,
        since: datetime | str | None = None,
        limit: int | None = None,
    ) -> list[dict[str, Any]]:
        """The account's recorded API requests that match every filter given, oldest first
        (`status` is `201` or a class, `"4xx"`; `since` a time on the account's clock, such as
        `server.now()`); the newest `limit` of them when given."""
        query = _query(operation, method, path_prefix, status, error_code, since)
        if limit is not None:
            query["limit"] = str(limit)
        answer = self._admin("GET", "/_admin/requests" + _encoded(query))
        found: list[dict[str, Any]] = answer["requests"]
        return found

    def request_count(
        self,
        operation: str | None = None,
        *,
        method: str | None = None,
        path_prefix: str | None = None,
        status: int | str | None = None,
        error_code: str | None = None,
        since: datetime | str | None = None,
    ) -> int:
        """How many recorded requests match every filter given (counted by the server)."""
        query = _query(operation, method, path_prefix, status, error_code, since)
        answer = self._admin("GET", "/_admin/requests/count" + _encoded(query))
        return int(answer["count"])

    def clear_requests(self) -> None:
        """Empty the account's request journal (nothing else changes)."""
        self._admin("DELETE", "/_admin/requests")

    def verify(
        self,
        operation: str | None = None,
        *,
        count: int | None = 1,
        at_least: int | None = None,
        method: str | None = None,
        path_prefix: str | None = None,
        status: int | str | None = None,
        error_code: str | None = None,
        since: datetime | str | None = None,
        body: Mapping[str, Any] | None = None,
    ) -> list[dict[str, Any]]:
        """Check that exactly `count` recorded requests (or `at_least` that many) match every
        filter given, `body` being a part of the request body (every key it names, nested,
        with the same value). Returns the matching requests; raises VerificationError listing
        what was recorded and why each request did not match."""
        wanted = _Wanted(operation, method, path_prefix, status, error_code, body)
        recorded = self.requests(since=since)
        matched = [entry for entry in recorded if not wanted.misses(entry)]
        ok = len(matched) >= at_least if at_least is not None else len(matched) == count
        if not ok:
            expected = f"at least {at_least}" if at_least is not None else f"exactly {count}"
            raise VerificationError(_report(expected, wanted, recorded, matched))
        return matched


def _query(
    operation: str | None,
    method: str | None,
    path_prefix: str | None,
    status: int | str | None,
    error_code: str | None,
    since: datetime | str | None,
) -> dict[str, str]:
    values = {
        "operation": operation,
        "method": method.upper() if method else None,
        "path_prefix": path_prefix,
        "status": None if status is None else str(status),
        "error_code": error_code,
        "since": None if since is None else inputs.as_rfc3339(since),
    }
    return {name: value for name, value in values.items() if value is not None}


def _encoded(query: Mapping[str, str]) -> str:
    return "?" + urlencode(query) if query else ""


class _Wanted:
    """What `verify` looks for, and how a recorded request differs from it."""

    def __init__(
        self,
        operation: str | None,
        method: str | None,
        path_prefix: str | None,
        status: int | str | None,
        error_code: str | None,
        body: Mapping[str, Any] | None,
    ) -> None:
        self.fields = {
            "operation": operation,
            "method": method.upper() if method else None,
            "path_prefix": path_prefix,
            "status": None if status is None else str(status),
            "error_code": error_code,
        }
        self.body = body

    def describe(self) -> str:
        parts = [f"{name}={value}" for name, value in self.fields.items() if value is not None]
        if self.body is not None:
            parts.append(f"body containing {json.dumps(self.body, sort_keys=True)}")
        return ", ".join(parts) or "any request"

    def misses(self, entry: Mapping[str, Any]) -> list[str]:
        """Why `entry` does not match (empty: it matches)."""
        found: list[str] = []
        op, method, prefix, status, code = self.fields.values()
        if op is not None and entry["operation"] != op:
            found.append(f"operation {entry['operation']} != {op}")
        if method is not None and entry["method"] != method:
            found.append(f"method {entry['method']} != {method}")
        if prefix is not None and not entry["path"].startswith(prefix):
            found.append(f"path {entry['path']} does not start with {prefix}")
        if status is not None and not _status_matches(entry["status"], status):
            found.append(f"status {entry['status']} != {status}")
        if code is not None and entry["error_code"] != code:
            found.append(f"error_code {entry['error_code']} != {code}")
        if self.body is not None:
            found += [f"body{where}" for where in _body_misses(entry["body"], self.body, "")]
        return found


def _status_matches(actual: int, wanted: str) -> bool:
    if wanted.endswith("xx"):
        return str(actual)[0] == wanted[0]
    return str(actual) == wanted


def _body_misses(actual: Any, wanted: Any, where: str) -> list[str]:
    """Where `actual` differs from the part `wanted` (a mapping's keys are a subset)."""
    if isinstance(wanted, Mapping):
        if not isinstance(actual, Mapping):
            return [f"{where or ''} is {json.dumps(actual)[:80]}, not an object"]
        misses: list[str] = []
        for key, value in wanted.items():
            if key not in actual:
                misses.append(f"{where}.{key} is missing")
            else:
                misses += _body_misses(actual[key], value, f"{where}.{key}")
        return misses
    if actual != wanted:
        return [f"{where} {json.dumps(actual)[:80]} != {json.dumps(wanted)[:80]}"]
    return []


def _report(
    expected: str,
    wanted: _Wanted,
    recorded: list[dict[str, Any]],
    matched: list[dict[str, Any]],
) -> str:
    lines = [
        f"expected {expected} request(s) matching {wanted.describe()}; "
        f"{len(matched)} matched, of {len(recorded)} recorded.",
    ]
    if not recorded:
        return f"{lines[0]} {EMPTY}"
    lines.append(f"Recorded requests, oldest first (the last {SHOWN} at most):")
    for entry in recorded[-SHOWN:]:
        misses = wanted.misses(entry)
        mark = "  = " if not misses else "  - "
        code = f" {entry['error_code']}" if entry["error_code"] else ""
        line = (
            f"{mark}#{entry['seq']} {entry['method']} {entry['path']} -> "
            f"{entry['status']}{code} ({entry['operation']})"
        )
        if misses:
            line += ": " + "; ".join(misses)
        lines.append(line)
    return "\n".join(lines)
