"""Liveness, readiness and metrics (no credentials, no version header)."""

from __future__ import annotations

import re
from contextlib import asynccontextmanager

import pytest

from tests.factories import assert_error
from tunnelgw.migrations import migrate
from tunnelgw.storage import db


def test_liveness(factory):
    assert factory.client(None).get("/healthz", version=None).json() == {"status": "ok"}


def test_ready_when_database_answers_at_head(factory):
    response = factory.client(None).get("/readyz", version=None)
    assert response.json() == {"status": "ready", "schema_revision": migrate.head()}


@pytest.mark.inprocess
def test_not_ready_when_schema_is_behind(factory, monkeypatch):
    monkeypatch.setattr(migrate, "head", lambda: "9999")
    body = assert_error(
        factory.client(None).get("/readyz", version=None), 503, "ERR_SERVICE_UNAVAILABLE"
    )
    assert "tunnelgw migrate" in body["msg"]


@pytest.mark.inprocess
def test_not_ready_when_database_is_unreachable(factory, monkeypatch):
    @asynccontextmanager
    async def broken():
        raise ConnectionRefusedError("database down")
        yield  # pragma: no cover

    monkeypatch.setattr(db, "read", broken)
    assert_error(factory.client(None).get("/readyz", version=None), 503, "ERR_SERVICE_UNAVAILABLE")


def _count(text: str, operation: str, status: str) -> float:
    pattern = (
        r'tunnelgw_requests_total\{method="GET",operation="'
        + re.escape(operation)
        + r'",status="'
        + status
        + r'"\} ([0-9.e+]+)'
    )
    found = re.search(pattern, text)
    return float(found.group(1)) if found else 0.0


def test_metrics_count_requests_by_operation_and_status(admin, factory):
    anonymous = factory.client(None)
    before = anonymous.get("/metrics", version=None).text
    admin.get("/api_keys")
    admin.get("/api_keys/ak_missing")
    response = anonymous.get("/metrics", version=None)
    assert response.headers["content-type"].startswith("text/plain")
    after = response.text
    assert (
        _count(after, "handlers.api_keys.list", "200")
        == _count(before, "handlers.api_keys.list", "200") + 1
    )
    assert _count(after, "handlers.api_keys.get", "404") >= 1
    assert "tunnelgw_request_duration_seconds_bucket" in after
