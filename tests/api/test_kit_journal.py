"""Issue 23: the request journal through the testing kit, as a user's test suite uses it: in a
child pytest with the plugin's `tunnelgw` fixture (verify a call count; read the report of a
failing verify), and a server whose journal keeps only a few requests."""

from __future__ import annotations

import os
import textwrap

import pytest

from tests.api.test_testing_kit import kit  # noqa: F401 - the child pytest's interpreter
from tunnelgw.testing import TunnelgwServer


@pytest.fixture
def engine_url() -> str | None:
    """The suite's database (PostgreSQL's throwaway cluster, set by the session's engine
    fixture), or None: a kit server's own SQLite."""
    return os.environ.get("TUNNELGW_TEST_DATABASE_URL") or None


JOURNAL_TESTS = """\
import pytest
from tunnelgw.testing import VerificationError


def create_backend(client, body):
    # The code under test: one create, one read back.
    created = client.post("/backends/http_response", json={"body": body, "status_code": 200})
    client.get(f"/backends/http_response/{created.json()['id']}")
    return created.json()


def test_verify_a_call_count(tunnelgw):
    with tunnelgw.client() as client:
        create_backend(client, "hello")
        client.post("/backends/http_response", json={"body": 5})
    tunnelgw.verify("http_response_backends.create", status=201, body={"body": "hello"})
    tunnelgw.verify("http_response_backends.create", status="4xx", error_code="ERR_WRONG_TYPE")
    tunnelgw.verify(method="GET", path_prefix="/backends/http_response/", count=1)
    tunnelgw.verify(at_least=3)
    assert tunnelgw.request_count("http_response_backends.create") == 2
    assert [r["status"] for r in tunnelgw.requests()] == [201, 200, 400]


def test_each_test_starts_with_an_empty_journal(tunnelgw):
    assert tunnelgw.requests() == []


def test_a_failing_verify_says_what_was_recorded(tunnelgw):
    with tunnelgw.client() as client:
        create_backend(client, "hello")
    with pytest.raises(VerificationError) as failed:
        tunnelgw.verify("http_response_backends.create", count=2, body={"body": "bye"})
    report = str(failed.value)
    print("REPORT-START\\n" + report + "\\nREPORT-END")
    tunnelgw.verify("http_response_backends.create", count=2)  # fails: the suite shows it
"""


def test_verify_in_a_child_pytest(kit, tmp_path):  # noqa: F811 - the fixture imported above
    folder = tmp_path / "suite"
    folder.mkdir()
    (folder / "pytest.ini").write_text("[pytest]\nfilterwarnings = error\n")
    (folder / "test_journal.py").write_text(JOURNAL_TESTS)
    done = kit.pytest(folder, "-s")
    report = done.stdout + done.stderr
    assert "1 failed, 2 passed" in report, report
    shown = report.split("REPORT-START\n", 1)[1].split("\nREPORT-END", 1)[0]
    lines = shown.splitlines()
    assert lines[0] == (
        "expected exactly 2 request(s) matching operation=http_response_backends.create, "
        'body containing {"body": "bye"}; 0 matched, of 2 recorded.'
    )
    assert lines[1].startswith("Recorded requests, oldest first")
    assert lines[2].endswith(
        "POST /backends/http_response -> 201 (http_response_backends.create): "
        'body.body "hello" != "bye"'
    )
    assert "GET /backends/http_response/bkdhr_" in lines[3]
    assert "operation http_response_backends.get != http_response_backends.create" in lines[3]
    # The failing verify of the last test is pytest's failure, with the same report.
    assert "VerificationError: expected exactly 2 request(s) matching" in report
    assert "1 matched, of 2 recorded" in report


def test_the_journal_keeps_the_newest_requests(engine_url):
    # 20 kept: the server deletes the older ones once 10 more (half) are written, and reads
    # never show more than the newest 20 in between.
    server = TunnelgwServer(database_url=engine_url, journal_max_entries=20)
    with server, server.client() as client:
        for n in range(25):
            client.get("/api_keys", params={"limit": n + 1})
            kept = server.requests()
            assert [r["query"] for r in kept] == [f"limit={k + 1}" for k in range(n + 1)][-20:]
            assert server.request_count() == len(kept)
        assert server.request_count(method="GET", since=kept[0]["at"]) == 20
        assert [r["query"] for r in server.requests(limit=2)] == ["limit=24", "limit=25"]
        server.clear_requests()
        assert server.requests() == []


def test_no_journal_when_it_keeps_nothing(engine_url):
    server = TunnelgwServer(database_url=engine_url, journal_max_entries=0)
    with server, server.client() as client:
        client.get("/api_keys")
        assert server.requests() == []


def test_the_report_of_an_empty_journal():
    from tunnelgw.testing.journal import _report, _Wanted

    wanted = _Wanted("api_keys.create", None, None, 201, None, None)
    text = _report("exactly 1", wanted, [], [])
    assert text == textwrap.dedent(
        """\
        expected exactly 1 request(s) matching operation=api_keys.create, status=201; 0 \
matched, of 0 recorded. The journal is empty: were the requests sent to this server with \
its token?"""
    )
