"""Abuse reports (`/abuse_reports`): create and get.

A report names URLs; each URL's hostname is recorded once, with whether this server serves
it (tunnelgw.services.abuse); the simulated review decides the hostnames one by one on the
account's clock (tunnelgw.models.abuse_report).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tunnelgw.core import ids, settings
from tunnelgw.core.errors import ApiError, Code
from tunnelgw.models import AbuseReport
from tunnelgw.rules import hostnames
from tunnelgw.services import abuse, crud
from tunnelgw.services.auth import Caller
from tunnelgw.services.crud import Body


def reported_hostnames(urls: Sequence[str]) -> list[str]:
    """The hostnames of `urls`, each once, in the order the URLs name them; 400
    ERR_INVALID_URL naming the first URL that is not an absolute http, https, tcp or tls URL
    with a host name or IP address."""
    found: list[str] = []
    for index, url in enumerate(urls):
        host = hostnames.url_hostname(url)
        if host is None:
            raise ApiError(
                Code.INVALID_URL,
                f"urls.{index}: {url[:256]!r} is not an absolute URL of scheme "
                f"{', '.join(hostnames.URL_SCHEMES)} with a host name or IP address "
                "(such as https://app.example.com/path).",
                field=f"urls.{index}",
            )
        if host not in found:
            found.append(host)
    return found


async def create(caller: Caller, body: Body = None) -> tuple[dict[str, Any], int]:
    body = body or {}
    urls = list(body["urls"])
    names = reported_hostnames(urls)
    report = AbuseReport.new(
        id=ids.new_id(AbuseReport.PREFIX),
        account_id=caller.account_id,
        urls=urls,
        meta=body.get("metadata") or "",
        step_seconds=settings.current().abuse_report_review_seconds,
    )
    return (await abuse.report(report, names)).to_api(), 201


async def get(caller: Caller, id: str) -> dict[str, Any]:  # noqa: A002 - the spec's parameter name
    return await crud.read_one(caller, AbuseReport, id)
