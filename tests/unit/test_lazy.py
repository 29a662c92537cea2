"""Lazy modules: `cryptography`, the fixture loader and cel-rust load at first use, not at
start-up."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from tunnelgw import lazy

ROOT = Path(__file__).resolve().parents[2]


def test_a_lazy_module_imports_at_the_first_attribute_read():
    stand_in = lazy.module("tunnelgw.crypto.x509")
    assert "tunnelgw.crypto.x509" in repr(stand_in)
    from tunnelgw.crypto import x509

    assert stand_in.parse_ca is x509.parse_ca


def test_serving_imports_neither_cryptography_nor_the_fixture_loader():
    """What `tunnelgw serve` imports before its first request (the app, the CLI, every
    handler Connexion resolves) leaves `cryptography`, the fixture loader and cel-rust unloaded."""
    code = textwrap.dedent(
        """
        import importlib, pathlib, sys
        import tunnelgw.app, tunnelgw.cli
        for path in pathlib.Path("handlers").glob("*.py"):
            importlib.import_module(f"handlers.{path.stem}")
        lazy = ("cryptography", "tunnelgw.fixtures", "alembic", "cel")
        loaded = [m for m in lazy if m in sys.modules]
        print(",".join(loaded))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == ""
