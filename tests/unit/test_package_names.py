"""Everything installs under `tunnelgw` (issue 30): the top-level `handlers/` and `models/`
folders are the package's `tunnelgw.handlers` and `tunnelgw.models` (symlinks inside
tunnelgw/), and no module imports them by their generic top-level names. From the checkout
both names would still import, as a second copy of every module: a second SQLModel table
class per table, on the same metadata, which breaks it. A user's own `models` or `handlers`
must never be what tunnelgw picks up (tests/install has the clean install beside one)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GENERIC = {"models", "handlers"}
# Every Python file of the repository but the virtual environments and the symlinked copies.
SKIP = {".venv", ".tox", "node_modules", ".git"}
LINKS = {("tunnelgw", name) for name in GENERIC}


def _sources() -> list[Path]:
    found = []
    for path in ROOT.rglob("*.py"):
        parts = path.relative_to(ROOT).parts
        if SKIP.intersection(parts) or parts[:2] in LINKS:
            continue
        found.append(path)
    return found


def _generic_imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    bad = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        elif (
            isinstance(node, ast.Call)
            and getattr(node.func, "attr", getattr(node.func, "id", None)) == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant | ast.JoinedStr)
        ):
            first = node.args[0]
            head = first.values[0] if isinstance(first, ast.JoinedStr) else first
            names = [head.value] if isinstance(head, ast.Constant) else []
        else:
            continue
        bad += [f"{node.lineno}: {n}" for n in names if str(n).split(".")[0] in GENERIC]
    return bad


def test_the_symlinks_map_the_folders_into_the_package():
    for name in GENERIC:
        link = ROOT / "tunnelgw" / name
        assert link.is_symlink()
        assert link.resolve() == ROOT / name


def test_no_module_imports_the_top_level_models_or_handlers():
    sources = _sources()
    assert len(sources) > 300
    found = {
        str(path.relative_to(ROOT)): bad for path in sources if (bad := _generic_imports(path))
    }
    assert found == {}, "import tunnelgw.models / tunnelgw.handlers instead"


def test_serving_loads_neither_generic_name():
    """From the checkout (where `models` and `handlers` are importable), the app with every
    handler, the fixture loader and the migrations' metadata load no module by those names."""
    code = """
import pathlib, importlib, sys
import tunnelgw.http.app, tunnelgw.cli, tunnelgw.seeding.loader, tunnelgw.testing.server
for path in pathlib.Path("handlers").glob("*.py"):
    importlib.import_module(f"tunnelgw.handlers.{path.stem}")
print(sorted(m for m in sys.modules if m.split(".")[0] in ("models", "handlers")))
"""
    done = subprocess.run(
        [sys.executable, "-W", "ignore", "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    assert done.stdout.strip() == "[]"
