"""The snapshot calls of `TunnelgwServer` (tunnelgw.testing.server): export the account's
whole state as a fixture document, to load later with `load(...)` on this server or
another. Only the standard library is imported here at import time."""

from __future__ import annotations

from typing import Any


class SnapshotCalls:
    """Account snapshots of one server's account; the server class provides `_object` (one
    admin request answering a JSON object, an error status raised as TunnelgwError)."""

    def _object(
        self, method: str, path: str, body: Any = None
    ) -> dict[str, Any]:  # pragma: no cover
        raise NotImplementedError

    def snapshot(self, include_secrets: bool = False) -> dict[str, Any]:
        """The account's whole state as a fixture document (`{"version": 1, "snapshot":
        {...}}`): every resource's rows with their ids, for `load(...)` into an empty account
        (after `reset()`, or on another server). Secrets (token hashes, private keys, secret
        values) are left out and listed in `snapshot.left_out`; `include_secrets=True` seals
        them under this server's key-encryption key instead (they load only into a server
        with the same key)."""
        path = "/_admin/snapshot?include_secrets=true" if include_secrets else "/_admin/snapshot"
        return self._object("GET", path)
