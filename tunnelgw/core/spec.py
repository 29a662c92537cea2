"""The API document the server serves: `openapi.yaml`, shipped in the package, parsed once
per process and handed out as fresh copies."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import sys
from pathlib import Path
from typing import Any

import orjson
import yaml

SPEC_DIR = Path(__file__).resolve().parent.parent
SPEC_FILE = SPEC_DIR / "openapi.yaml"


def load() -> dict[str, Any]:
    """The parsed `openapi.yaml`, a fresh copy for each caller (callers adapt it)."""
    spec: dict[str, Any] = orjson.loads(_parsed_spec())
    return spec


@functools.cache
def _parsed_spec() -> bytes:
    """`openapi.yaml` parsed, as JSON. Constructing the YAML's objects takes ~0.1 s, a tenth
    of start-up; JSON loads 25 times faster. So the parse is kept, like Python's bytecode,
    in `__pycache__/openapi.<digest of the file>.json` beside the spec (written unless the
    folder is read-only or `PYTHONDONTWRITEBYTECODE` is set; a changed spec has another
    digest and is parsed again). Once per process either way."""
    text = SPEC_FILE.read_bytes()
    cached = SPEC_DIR / "__pycache__" / f"openapi.{hashlib.sha256(text).hexdigest()[:32]}.json"
    with contextlib.suppress(OSError, orjson.JSONDecodeError):
        kept = cached.read_bytes()
        orjson.loads(kept)  # a damaged file is parsed again (4 ms)
        return kept
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml: ten times faster
    parsed = orjson.dumps(yaml.load(text, Loader=loader))  # noqa: S506 - a safe loader
    if not sys.dont_write_bytecode:
        with contextlib.suppress(OSError):
            cached.parent.mkdir(exist_ok=True)
            partial = cached.with_name(f"{cached.name}.{os.getpid()}.tmp")
            partial.write_bytes(parsed)
            os.replace(partial, cached)
    return parsed
