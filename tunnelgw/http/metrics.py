"""Prometheus metrics: requests by operation, method and status, and their latency.

With several workers, `tunnelgw serve` points PROMETHEUS_MULTIPROC_DIR at a directory in the
data dir before the workers start; each worker writes its samples there and `/metrics`, on
any worker, reports the sum over all of them.
"""

from __future__ import annotations

import os
from typing import Any

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
)
from prometheus_client.multiprocess import MultiProcessCollector

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"

REQUESTS = Counter(
    "tunnelgw_requests_total",
    "HTTP requests answered, by API operation, method and status.",
    ["operation", "method", "status"],
)
LATENCY = Histogram(
    "tunnelgw_request_duration_seconds",
    "Time to answer a request, by API operation.",
    ["operation"],
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0),
)


IP_REFUSALS = Counter(
    "tunnelgw_ip_restriction_refusals_total",
    "API requests that an `api` IP restriction refused (enforced) or would have refused "
    "(not enforced: recorded only).",
    ["enforced"],
)


def ip_refused(*, enforced: bool) -> None:
    IP_REFUSALS.labels("true" if enforced else "false").inc()


_children: dict[tuple[str | None, str, int], tuple[Any, Any]] = {}
_MAX_CHILDREN = 4096  # label sets whose metric objects are kept at hand


def observe(operation: str | None, method: str, status: int, seconds: float) -> None:
    key = (operation, method, status)
    pair = _children.get(key)
    if pair is None:
        name = operation or "unmatched"
        pair = (REQUESTS.labels(name, method, str(status)), LATENCY.labels(name))
        if len(_children) < _MAX_CHILDREN:
            _children[key] = pair
    pair[0].inc()
    pair[1].observe(seconds)


def exposition() -> tuple[bytes, str]:
    """The text exposition of every worker's metrics, and its content type."""
    if os.environ.get(MULTIPROC_ENV):
        registry = CollectorRegistry()
        MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
        return generate_latest(registry), CONTENT_TYPE_LATEST
    return generate_latest(REGISTRY), CONTENT_TYPE_LATEST
