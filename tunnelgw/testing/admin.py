"""The admin API's calls of `TunnelgwServer` (tunnelgw.testing.server): reset, fixtures, the
simulated clock, fault rules, simulated agents, and through its mixins the request journal,
events and snapshots (tunnelgw.testing.journal, .events, .snapshots), each one request to
`/_admin/...` of the server's account. Only the standard library is imported here at import
time."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from tunnelgw.testing import inputs
from tunnelgw.testing.events import EventCalls
from tunnelgw.testing.journal import JournalCalls
from tunnelgw.testing.snapshots import SnapshotCalls


class TunnelgwError(Exception):
    """A call of the server answered with an error status. `body` is the parsed error body
    (`error_code`, `msg`, `details`) when the server sent JSON, else the text."""

    def __init__(self, method: str, path: str, status: int, body: Any) -> None:
        self.method = method
        self.path = path
        self.status = status
        self.body = body
        fields = body if isinstance(body, dict) else {}
        self.error_code: str | None = fields.get("error_code")
        self.msg: str | None = fields.get("msg")
        self.details: dict[str, Any] = fields.get("details") or {}
        super().__init__(self._message())

    def _message(self) -> str:
        if self.error_code is None:
            text = str(self.body)[:2000]
            return f"{self.method} {self.path}: {self.status}: {text}"
        message = f"{self.method} {self.path}: {self.status} {self.error_code}: {self.msg}"
        extra = {k: v for k, v in self.details.items() if k != "operation_id"}
        if extra:
            message += "\n" + json.dumps(extra, indent=2, default=str)[:4000]
        return message


class AdminCalls(EventCalls, JournalCalls, SnapshotCalls):
    """The admin API of one server's account; the server class provides `_admin` (one
    request, an error status raised as TunnelgwError)."""

    def _admin(self, method: str, path: str, body: Any = None) -> Any:  # pragma: no cover
        raise NotImplementedError

    def reset(self) -> dict[str, Any]:
        """Empty the account (it keeps its principals, API keys and access tokens), clear its
        fault rules and reset its clock; returns `{"account_id", "deleted": {table: count}}`."""
        return self._object("POST", "/_admin/reset")

    def load(self, fixture: str | os.PathLike[str] | Mapping[str, Any]) -> dict[str, Any]:
        """Load a fixture into the account: a file (path), a dict, or YAML/JSON text. Files
        and text are checked here first, so problems name positions in them
        (tunnelgw.seeding.FixtureError). Returns the summary (labels, counts, tokens)."""
        if isinstance(fixture, Mapping):
            document: Any = dict(fixture)
        else:
            text, name = inputs.fixture_source(fixture)
            document = inputs.checked_document(text, name)
        return self._object("POST", "/_admin/fixtures", document)

    def advance(self, seconds: float) -> datetime:
        """Move the account's simulated clock forward; returns the simulated now."""
        return self._clock({"advance_seconds": seconds})

    def set_time(self, when: datetime | str) -> datetime:
        """Set the account's simulated clock (a naive datetime is UTC; the clock never moves
        backwards); returns the simulated now."""
        return self._clock({"set": inputs.as_rfc3339(when)})

    def reset_clock(self) -> datetime:
        """Back to real time; returns now."""
        return self._clock({"reset": True})

    def now(self) -> datetime:
        """The account's simulated now."""
        return inputs.parse_time(self._object("GET", "/_admin/clock")["now"])

    def fault(
        self,
        operation: str,
        status: int | None = None,
        count: int | None = None,
        latency_ms: int | None = None,
        probability: float | None = None,
    ) -> dict[str, Any]:
        """Inject a fault into an operation (the spec's operationId, e.g.
        `reserved_domains.create`): an error `status`, a latency, for the next `count` calls
        or with a `probability`. Returns the rule."""
        rule: dict[str, Any] = {"operation": operation}
        for name, value in (
            ("status", status),
            ("count", count),
            ("latency_ms", latency_ms),
            ("probability", probability),
        ):
            if value is not None:
                rule[name] = value
        return self._object("POST", "/_admin/faults", rule)

    def faults(self) -> list[dict[str, Any]]:
        """The active fault rules."""
        rules: list[dict[str, Any]] = self._object("GET", "/_admin/faults")["faults"]
        return rules

    def clear_faults(self) -> None:
        self._admin("DELETE", "/_admin/faults")

    def connect_agent(
        self,
        authtoken: str,
        *endpoints: str | Mapping[str, Any],
        **agent: Any,
    ) -> dict[str, Any]:
        """Connect a simulated agent with a tunnel credential's `authtoken`, as a real agent
        connects: each of `endpoints` is a URL (`"https://app.example.com"`) or a mapping
        (`url` or `labels`, `upstream_url`, `traffic_policy`, `pooling_enabled`); `agent` sets
        `ip`, `agent_version`, `os`, `region`, `metadata`. Returns `{"tunnel_session",
        "tunnels", "endpoints"}`; a refused connect raises TunnelgwError with the server's
        error code (e.g. `ERR_AGENT_BIND_DENIED`)."""
        wanted = [{"url": item} if isinstance(item, str) else dict(item) for item in endpoints]
        body = {"authtoken": authtoken, "endpoints": wanted, **agent}
        return self._object("POST", "/_admin/agent_sessions", body)

    def disconnect_agent(self, session_id: str) -> None:
        """The agent of the tunnel session `session_id` goes away: the session, its tunnels
        and endpoints are removed."""
        self._admin("DELETE", f"/_admin/agent_sessions/{session_id}")

    # Access tokens (not the admin API: `POST /access_tokens` with the server's token).

    def access_token(
        self,
        scopes: Iterable[str],
        *,
        description: str = "testing kit",
        expires_at: datetime | str | None = None,
    ) -> str:
        """A new access token of the account's admin user holding exactly `scopes` (such as
        `["endpoints:read", "domains:write"]`; `tunnel:start` makes it an agent's authtoken);
        returns its token, for the code under test to use instead of the server's API key.
        A call outside its scopes answers 403 `ERR_SCOPE_REQUIRED`, naming the scope in
        `details.scope`. `reset()` keeps access tokens, as it keeps API keys."""
        body: dict[str, Any] = {"scopes": [*scopes], "description": description}
        if expires_at is not None:
            body["expires_at"] = inputs.as_rfc3339(expires_at)
        return str(self._object("POST", "/access_tokens", body)["token"])

    def scopes_used(self, *, since: datetime | str | None = None) -> set[str]:
        """The scopes the account's recorded API requests needed (each entry's `scope`),
        whatever credential made them: run the code under test with the server's API key,
        and this is the least an access token for it must hold."""
        return {entry["scope"] for entry in self.requests(since=since) if entry.get("scope")}

    # Internals.

    def _object(self, method: str, path: str, body: Any = None) -> dict[str, Any]:
        answer = self._admin(method, path, body)
        if not isinstance(answer, dict):
            raise TunnelgwError(method, path, 200, answer)  # not the documented answer
        return answer

    def _clock(self, body: dict[str, Any]) -> datetime:
        return inputs.parse_time(self._object("POST", "/_admin/clock", body)["now"])
