"""The house keeps its shape: small modules (tunnelgw, and the handlers and models it installs
from the top-level folders). The layers are kept by import-linter (`lint-imports`)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAX_LINES = 500


def test_no_module_is_over_500_lines():
    modules = [
        path
        for package in ("tunnelgw", "handlers", "models")
        for path in (ROOT / package).rglob("*.py")
    ]
    assert len(modules) > 100
    long = {
        str(path.relative_to(ROOT)): lines
        for path in modules
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert long == {}, "split these modules by concern (docs/design.md)"
