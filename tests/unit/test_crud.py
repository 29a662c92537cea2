"""Shared CRUD and paging pieces without HTTP: cursor parsing and PATCH application."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from tunnelgw.core import ids
from tunnelgw.core.errors import ApiError, Code
from tunnelgw.services.crud import apply_patch
from tunnelgw.services.paging import cursor


def test_cursor_checks_the_prefix():
    a = ids.new_id("ak")
    assert cursor("ak", a) == a
    assert cursor("ak", None) is None
    assert cursor("ak", "") is None
    with pytest.raises(ApiError) as info:
        cursor("ak", ids.new_id("bkdhr"))
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
