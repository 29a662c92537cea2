"""Liveness: answers without authentication or version header."""

from __future__ import annotations


async def get() -> dict[str, str]:
    return {"status": "ok"}
