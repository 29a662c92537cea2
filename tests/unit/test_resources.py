"""Shared CRUD pieces without HTTP: cursor parsing and PATCH application."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from tunnelgw import ids
from tunnelgw.errors import ApiError, Code
from tunnelgw.resources import apply_patch, cursor


def test_cursor_prefers_before_id_and_checks_the_prefix():
    a, b = ids.new_id("ak"), ids.new_id("ak")
    assert cursor("ak", a, b) == a
    assert cursor("ak", None, b) == b
    assert cursor("ak", None, None) is None
    assert cursor("ak", "", None) is None
    with pytest.raises(ApiError) as info:
        cursor("ak", ids.new_id("bkdhr"), None)
    assert info.value.code is Code.INVALID_PARAMETER
    assert info.value.details == {"param": "before_id"}


def test_apply_patch_sets_only_present_non_null_keys():
    row = SimpleNamespace(description="d", meta="m")
    apply_patch(
        row,
        {"description": None, "metadata": ""},
        {"description": "description", "metadata": "meta"},
    )
    assert (row.description, row.meta) == ("d", "")
