"""Abuse reports: /abuse_reports (create, get). Hostnames come from the URLs; the simulated
review decides them one by one on the account's clock, which the admin API moves."""

from __future__ import annotations

import time
import uuid

import pytest

from tests.factories import assert_error
from tunnelgw.core import settings as settings_module
from tunnelgw.models import Endpoint

PATH = "/abuse_reports"
CLOCK = "/_admin/clock"
STEP = 60  # TUNNELGW_ABUSE_REPORT_REVIEW_SECONDS's default, which the test app keeps


def _early_in_a_second() -> None:
    """Wait for the start of the next wall-clock second. The review counts whole seconds from
    `created_at` (kept to the second): a real second that ends between the create and a read
    would move the review on by one second more than the clock was advanced."""
    time.sleep(1.02 - time.time() % 1)


def _unique(label: str) -> str:
    return f"{label}-{uuid.uuid4().hex[:10]}"


def _advance(client, seconds: int) -> None:  # type: ignore[no-untyped-def]
    assert client.post(CLOCK, json={"advance_seconds": seconds}).status_code == 200


def _statuses(report):  # type: ignore[no-untyped-def]
    return report["status"], [(h["hostname"], h["status"]) for h in report["hostnames"]]


def test_the_review_moves_with_the_clock(admin, other, factory):
    # Served here: another account's reserved domain, a name under a wildcard domain, and an
    # endpoint's host. Not served: a name this server knows nothing of.
    reserved = other.post("/reserved_domains", json={"name": _unique("shop")}).json()["domain"]
    wildcard = f"*.{_unique('w')}.example.com"
    assert other.post("/reserved_domains", json={"domain": wildcard}).status_code == 201
    under = "a.b." + wildcard.removeprefix("*.")
    endpoint_host = f"{_unique('ep')}.example.net"
    factory.row(
        Endpoint,
        other.creds.account_id,
        proto="https",
        hostport=f"{endpoint_host}:443",
        public_url=f"https://{endpoint_host}",
        type="ephemeral",
    )
    unknown = f"{_unique('nowhere')}.example.org"
    urls = [
        f"https://{reserved.upper()}/login?next=/",
        f"http://{reserved}:8080/other",  # the same hostname: listed once
        f"https://{under}/x",
        f"tls://{endpoint_host}:443",
        f"https://{unknown}/",
    ]
    _early_in_a_second()  # the create and the first two reads then share one second
    created = admin.post(PATH, json={"urls": urls, "metadata": '{"ticket": 7}'})
    assert created.status_code == 201, created.text
    report = created.json()
    assert report["id"].startswith("abrp_")
    assert report["uri"] == f"http://testserver{PATH}/{report['id']}"
    assert (report["urls"], report["metadata"]) == (urls, '{"ticket": 7}')
    names = [reserved, under, endpoint_host, unknown]
    assert _statuses(report) == ("PENDING", [(name, "PENDING") for name in names])

    url = f"{PATH}/{report['id']}"
    _advance(admin, STEP - 1)
    assert admin.get(url).json() == report
    _advance(admin, 1)
    assert _statuses(admin.get(url).json()) == (
        "PARTIALLY_PROCESSED",
        [(reserved, "BANNED"), *((name, "PENDING") for name in names[1:])],
    )
    _advance(admin, 2 * STEP)
    assert _statuses(admin.get(url).json())[1][:3] == [
        (reserved, "BANNED"),
        (under, "BANNED"),
        (endpoint_host, "BANNED"),
    ]
    _advance(admin, STEP)
    final = admin.get(url).json()
    assert _statuses(final) == (
        "PROCESSED",
        [(reserved, "BANNED"), (under, "BANNED"), (endpoint_host, "BANNED"), (unknown, "IGNORE")],
    )
    assert {k: v for k, v in final.items() if k not in ("status", "hostnames")} == {
        k: v for k, v in report.items() if k not in ("status", "hostnames")
    }
    # Another account's clock has not moved: its view of time is its own, but the report
    # is not its to read.
    assert_error(other.get(url), 404, "ERR_NOT_FOUND")


def test_what_was_served_is_decided_when_the_report_is_filed(admin):
    name = _unique("later")
    report = admin.post(PATH, json={"urls": [f"https://{name}.tunnelgw.test/"]}).json()
    assert admin.post("/reserved_domains", json={"name": name}).status_code == 201
    _advance(admin, STEP)
    assert _statuses(admin.get(f"{PATH}/{report['id']}").json()) == (
        "PROCESSED",
        [(f"{name}.tunnelgw.test", "IGNORE")],
    )


@pytest.mark.parametrize(
    ("body", "code", "field"),
    [
        ({}, "ERR_MISSING_FIELD", "urls"),
        ({"urls": []}, "ERR_INVALID_FIELD", "urls"),
        ({"urls": "https://a.example"}, "ERR_WRONG_TYPE", "urls"),
        ({"urls": [5]}, "ERR_WRONG_TYPE", "urls.0"),
        ({"urls": ["https://a.example", "a.example"]}, "ERR_INVALID_URL", "urls.1"),
        ({"urls": ["ftp://a.example/x"]}, "ERR_INVALID_URL", "urls.0"),
        ({"urls": ["https:///nohost"]}, "ERR_INVALID_URL", "urls.0"),
        ({"urls": ["https://a.example:99999/"]}, "ERR_INVALID_URL", "urls.0"),
        ({"urls": ["https://bad_host.example/"]}, "ERR_INVALID_URL", "urls.0"),
        ({"urls": ["https://*.example.com/"]}, "ERR_INVALID_URL", "urls.0"),
        ({"urls": ["https://a.example/x y"]}, "ERR_INVALID_URL", "urls.0"),
        ({"urls": ["https://a.example/" + "x" * 2048]}, "ERR_FIELD_TOO_LONG", "urls.0"),
        ({"urls": [f"https://h{i}.example/" for i in range(101)]}, "ERR_FIELD_TOO_LONG", "urls"),
        ({"urls": ["https://a.example"], "metadata": "x" * 4097}, "ERR_FIELD_TOO_LONG", "metadata"),
        ({"urls": ["https://a.example"], "description": "d"}, "ERR_UNKNOWN_FIELD", "description"),
        ({"urls": ["https://a.example"], "status": "PROCESSED"}, "ERR_UNKNOWN_FIELD", "status"),
    ],
)
def test_invalid_reports_are_refused(admin, body, code, field):
    assert assert_error(admin.post(PATH, json=body), 400, code)["details"]["field"] == field


def test_ip_address_urls_and_defaults(admin):
    report = admin.post(PATH, json={"urls": ["http://[2001:DB8::1]:8080/", "tcp://10.0.0.1:22"]})
    assert report.status_code == 201, report.text
    assert report.json()["metadata"] == ""
    assert [h["hostname"] for h in report.json()["hostnames"]] == ["2001:db8::1", "10.0.0.1"]


def test_unknown_ids_and_no_other_operations(admin):
    assert_error(admin.get(f"{PATH}/abrp_2pQcN3uHk0xVnFj2ZqB4CSdIm6L"), 404, "ERR_NOT_FOUND")
    assert_error(admin.get(f"{PATH}/ak_2pQcN3uHk0xVnFj2ZqB4CSdIm6L"), 404, "ERR_NOT_FOUND")
    report = admin.post(PATH, json={"urls": ["https://a.example/"]}).json()
    assert_error(admin.delete(f"{PATH}/{report['id']}"), 405, "ERR_METHOD_NOT_ALLOWED")
    assert_error(admin.get(PATH), 405, "ERR_METHOD_NOT_ALLOWED")


@pytest.mark.inprocess  # sets the serving app's settings
def test_no_review_time_decides_at_once(admin, monkeypatch):
    monkeypatch.setattr(settings_module.current(), "abuse_report_review_seconds", 0)
    report = admin.post(PATH, json={"urls": ["https://a.example/", "https://b.example/"]}).json()
    assert _statuses(report) == ("PROCESSED", [("a.example", "IGNORE"), ("b.example", "IGNORE")])
    # A report keeps the review time it was filed with.
    monkeypatch.setattr(settings_module.current(), "abuse_report_review_seconds", 3600)
    assert admin.get(f"{PATH}/{report['id']}").json() == report
