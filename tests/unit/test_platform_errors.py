"""The platform profile's error catalog (tunnelgw.core.platform_errors): its rows are sound,
docs/errors.md shows them, and the body it renders."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tunnelgw.core import platform_errors as pe
from tunnelgw.core.errors import ApiError, Code

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs" / "errors.md"
BEGIN, END = "<!-- platform-profile-table: begin -->", "<!-- platform-profile-table: end -->"


def docs_table() -> str:
    """The profile's table in docs/errors.md, as the catalog makes it."""
    lines = [
        "| tunnelgw code | where | platform code | status | status from | message |",
        "|---|---|---|---|---|---|",
    ]
    for row in pe.rows():
        where = ", ".join(row.families) or "any"
        if row.when:
            where += "; " + ", ".join(f"{k}={v}" for k, v in row.when.items())
        code = f"[`{row.error_code}`]({row.url})" if row.url else "(none)"
        message = row.template.replace("|", "\\|")
        lines.append(
            f"| `{row.code.error_code}` | {where} | {code} | {row.status} | {row.basis} "
            f"| {message} |"
        )
    lines.append("")
    unmapped = [code.error_code for code in Code if not pe.rows_of(code)]
    lines.append(
        "The platform documents no code for these; the profile answers them with tunnelgw's "
        "own code, status and message: " + ", ".join(f"`{c}`" for c in unmapped) + "."
    )
    return "\n".join(lines)


def test_docs_show_the_catalog():
    page = DOCS.read_text()
    shown = page.split(BEGIN, 1)[1].split(END, 1)[0].strip()
    assert shown == docs_table(), "regenerate: python -m tests.unit.test_platform_errors"


def test_rows_are_sound():
    for row in pe.rows():
        assert row.number is None or row.number > 0, row
        assert row.basis in (pe.SOURCED, pe.PATTERN, pe.KEPT), row
        # A kept status is tunnelgw's; only the platform's statuses are ever answered.
        if row.basis == pe.KEPT:
            assert row.status == row.code.status, row
        assert row.status not in (401, 409), row
        assert pe.placeholders(row.template) <= {"msg"} | _known_values(row), row
        assert "ngrok" not in row.template.lower().replace(pe.VERSION_HEADER.lower(), ""), row
        # No row is shadowed by an earlier row of the same code that applies wherever it does.
        for earlier in pe.rows_of(row.code):
            if earlier is row:
                break
            covers = (not earlier.families or set(row.families) <= set(earlier.families)) and (
                set(earlier.when.items()) <= set(row.when.items())
            )
            assert not (covers and row.families), (earlier, row)


def _known_values(row: pe.PlatformCode) -> set[str]:
    """Names a template may use: every detail and context key some raiser sets."""
    return {
        "field", "id", "param", "quota", "kind", "restrictions", "domain", "credential",
        "header", "version", "limit", "interval", "content_type", "supported", "length",
        "targets", "cidr", "rule", "url", "value", "count", "values", "name",
    }  # fmt: skip


def test_lookup_picks_the_first_row_that_applies():
    own = ApiError(
        Code.DOMAIN_IN_USE, context={"domain": "a.example", "reserved_by": "this account"}
    )
    other = ApiError(
        Code.DOMAIN_IN_USE, context={"domain": "a.example", "reserved_by": "another account"}
    )
    assert pe.lookup(own, "reserved_domains").number == 413
    assert pe.lookup(other, "reserved_domains").number == 414
    assert pe.lookup(own, "agent_ingresses").number == 6706
    assert pe.lookup(own, "endpoints") is None
    assert pe.lookup(ApiError(Code.CERTIFICATE_IN_USE), "tls_certificates") is None


def test_body_of_a_mapped_error():
    error = ApiError(
        Code.DOMAIN_IN_USE,
        "'a.example' is already reserved.",
        context={"domain": "a.example", "reserved_by": "this account"},
        field="domain",
    )
    status, body = pe.body(error, "op_1", "/reserved_domains")
    assert status == 400
    assert body == {
        "error_code": "ERR_NGROK_413",
        "status_code": 400,
        "msg": "This domain is already reserved for your account. Failed to reserve 'a.example'.",
        "details": {
            "field": "domain",
            "operation_id": "op_1",
            "tunnelgw_code": "ERR_DOMAIN_IN_USE",
        },
    }
    # tunnelgw's own body does not change: the context is the profile's alone.
    assert error.body("op_1")["details"] == {"field": "domain", "operation_id": "op_1"}


def test_body_of_a_plain_not_found_has_no_code():
    status, body = pe.body(ApiError(Code.NOT_FOUND, "No ApiKey.", id="ak_1"), "op_1", "/api_keys/x")
    assert status == 404
    assert body == {
        "status_code": 404,
        "msg": "Resource not found",
        "details": {"id": "ak_1", "operation_id": "op_1", "tunnelgw_code": "ERR_NOT_FOUND"},
    }


def test_body_of_an_unmapped_error_keeps_tunnelgw_code():
    status, body = pe.body(ApiError(Code.CERTIFICATE_IN_USE, "in use"), "op_1", "/x")
    assert (status, body["error_code"], body["msg"]) == (409, "ERR_CERTIFICATE_IN_USE", "in use")
    assert body["details"]["tunnelgw_code"] == "ERR_CERTIFICATE_IN_USE"


def test_a_missing_value_keeps_tunnelgw_message():
    """An injected 429 knows no rate: the platform's code, tunnelgw's words."""
    status, body = pe.body(ApiError(Code.RATE_LIMITED, "Slow down."), "op_1", "/api_keys")
    assert (status, body["error_code"], body["msg"]) == (429, "ERR_NGROK_226", "Slow down.")


@pytest.mark.parametrize(
    ("credential", "shown"), [("tgw_abcdefghijkl", "tgw_abcd..."), ("short", "short")]
)
def test_masked_credentials(credential: str, shown: str):
    assert pe.masked(credential) == shown


def test_error_codes_are_the_platform_form():
    assert all(re.fullmatch(r"ERR_NGROK_[0-9]+", c) for c in pe.error_codes())
    assert len(pe.error_codes()) == len(set(pe.error_codes()))


if __name__ == "__main__":  # rewrite the table in docs/errors.md
    text = DOCS.read_text()
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    DOCS.write_text(f"{head}{BEGIN}\n{docs_table()}\n{END}{tail}")
