"""docs/platform-coverage.md tells the truth: its table is every operation of the platform's
API (tunnelgw/core/platform_operations.yaml) with whether openapi.yaml serves it, and its
counts and extra list follow from the same two files. When a family's paths land in
openapi.yaml, this test names the rows to change (or prints the whole section to paste).
Also the data file itself: well-formed, each operation once, every served family marked."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tunnelgw.core import platform
from tunnelgw.core.spec import load as load_spec

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "platform-coverage.md"
SPEC = load_spec()
BEGIN, END = "<!-- coverage: begin -->", "<!-- coverage: end -->"
# Tags of this server's own operations, which are no operations of the platform.
OWN_TAGS = {"service", "admin"}


def expected_section() -> str:
    """The generated part of the page, from the data file and openapi.yaml."""
    ops = platform.operations()
    served = {op for op in ops if platform.is_served(op, SPEC)}
    counts = []
    for status in platform.STATUSES:
        mine = [op for op in ops if op.status == status]
        done = sum(op in served for op in mine)
        counts.append(f"- {status}: {done} of {len(mine)} operations served")
    rows = ["| status | family | method | path | here |", "|---|---|---|---|---|"]
    spec_paths = {platform.path_shape(path) for path in SPEC["paths"]}
    for op in ops:
        here = "served" if op in served else "405" if op.shape in spec_paths else "501"
        rows.append(f"| {op.status} | {op.family} | {op.method} | `{op.path}` | {here} |")
    platform_shapes = {(op.method, op.shape) for op in ops}
    extra = [
        f"- `{method.upper()} {path}`"
        for path, item in SPEC["paths"].items()
        for method, op in item.items()
        if method.upper() in platform.METHODS
        and not OWN_TAGS & set(op["tags"])
        and (method.upper(), platform.path_shape(path)) not in platform_shapes
    ]
    return "\n".join(
        [
            BEGIN,
            *counts,
            "",
            *rows,
            "",
            "Operations served here that the list above lacks (besides the service and admin",
            "paths):",
            "",
            *extra,
            END,
        ]
    )


def test_the_page_matches_the_data_file_and_the_spec():
    text = PAGE.read_text()
    assert text.count(BEGIN) == 1
    assert text.count(END) == 1
    found = text[text.index(BEGIN) : text.index(END) + len(END)]
    expected = expected_section()
    wrong = sorted(set(expected.splitlines()) ^ set(found.splitlines()))
    assert found == expected, (
        "docs/platform-coverage.md is out of date; lines that differ:\n"
        + "\n".join(wrong[:40])
        + f"\n\nThe section as it should read:\n{expected}"
    )


def test_the_data_file_lists_each_operation_once_with_a_template_path():
    ops = platform.operations()
    assert len(ops) >= 250
    assert len({(op.method, op.shape) for op in ops}) == len(ops)
    for op in ops:
        assert re.fullmatch(r"(/([a-z_]+|\{id\}))+", op.path), op
        assert re.fullmatch(r"[a-z_]+(/[a-z_]+)?", op.family), op


def test_every_served_operation_of_a_family_the_spec_serves_is_counted():
    """The spec's operations on the platform's paths are all in the data file under the
    same status the spec marks them with: `deprecated: true` for retired families only
    (bot users aside: a current family the platform deprecates on its own)."""
    by_shape = {(op.method, op.shape): op for op in platform.operations()}
    for path, item in SPEC["paths"].items():
        for method, op in item.items():
            key = (method.upper(), platform.path_shape(path))
            if key not in by_shape:
                continue
            retired = by_shape[key].status == "retired"
            if "bot_users" not in op["tags"]:
                assert bool(op.get("deprecated")) == retired, (method, path)


def test_a_malformed_data_file_is_refused(tmp_path, monkeypatch):
    bad = tmp_path / "ops.yaml"
    bad.write_text('operations:\n  - [current, vaults, FETCH, "/vaults"]\n')
    monkeypatch.setattr(platform, "DATA_FILE", bad)
    platform.operations.cache_clear()
    try:
        with pytest.raises(ValueError, match="bad entry"):
            platform.operations()
    finally:
        platform.operations.cache_clear()
