"""What a test hands `TunnelgwServer`, checked and converted before the server sees it:
settings, fixtures (a path, YAML/JSON text or a mapping) and times."""

from __future__ import annotations

import difflib
import json
import os
import warnings
from collections.abc import Mapping
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

TEXT = "<fixture text>"
# Settings the server object sets itself; the rest of tunnelgw.core.settings.Settings may
# be given as keyword arguments. (`admin_api` is always on: the helpers' methods need it.)
MANAGED_SETTINGS = frozenset(
    {
        "host",
        "port",
        "data_dir",
        "database_url",
        "bootstrap_token",
        "operator_token",
        "seed",
        "seed_account",
        "seed_dir",
    }
)
ALWAYS_ON = {"admin_api": "TUNNELGW_ADMIN_API"}


def setting_names() -> frozenset[str]:
    """The names of the server's settings (tunnelgw.core.settings.Settings)."""
    from tunnelgw.core.settings import Settings

    return frozenset(Settings.model_fields)


def check_settings(settings: Mapping[str, Any]) -> None:
    known = setting_names()
    for name in settings:
        if name in MANAGED_SETTINGS or name in ALWAYS_ON:
            raise TypeError(
                f"TunnelgwServer() sets {name!r} itself; use database_url=, port= or fixture= "
                "where one fits"
            )
        if name not in known:
            close = difflib.get_close_matches(name, sorted(known), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise TypeError(
                f"TunnelgwServer() got an unexpected keyword argument {name!r}: not a tunnelgw "
                f"setting (tunnelgw.core.settings.Settings){hint}"
            )


def env_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    secret = getattr(value, "get_secret_value", None)  # pydantic SecretStr
    if callable(secret):
        return str(secret())
    if isinstance(value, list | tuple | set | frozenset):
        return ",".join(str(item) for item in value)
    return str(value)


def json_default(value: Any) -> Any:
    if isinstance(value, datetime):
        from tunnelgw.core.timefmt import rfc3339

        return rfc3339(value)
    if isinstance(value, date | Path):
        return str(value)
    raise TypeError(f"{type(value).__name__} is not JSON serializable: {value!r}")


def as_rfc3339(value: datetime | str) -> str:
    if isinstance(value, str):
        return value
    from tunnelgw.core.timefmt import rfc3339

    return rfc3339(value)  # naive: UTC


def start_fixture(
    fixture: str | os.PathLike[str] | Mapping[str, Any] | None,
) -> Path | bytes | None:
    """The fixture to load at start (`serve --seed`), checked here first: a file's path, or
    the text to write to a file (a dict becomes indented JSON, so positions have lines)."""
    if fixture is None:
        return None
    if isinstance(fixture, Mapping):
        text, name = json.dumps(dict(fixture), indent=2, default=json_default).encode(), TEXT
    else:
        text, name = fixture_source(fixture)
    checked_document(text, name)
    return text if name == TEXT else Path(name).resolve()


def fixture_source(fixture: str | os.PathLike[str]) -> tuple[bytes, str]:
    """The bytes of a fixture and the name its positions use: a path (a PathLike, or a str
    of one line that is not a YAML/JSON document), else YAML/JSON text."""
    if isinstance(fixture, str) and ("\n" in fixture or fixture.lstrip()[:1] in ("{", "[")):
        return fixture.encode(), TEXT
    path = Path(fixture)
    return path.read_bytes(), str(path)


def checked_document(text: bytes, name: str) -> Any:
    """The fixture's data as the server will read it, after the local check
    (tunnelgw.seeding.FixtureError lists every problem as FILE:LINE:COLUMN)."""
    with warnings.catch_warnings():
        # The loader imports Connexion, which warns at import (jsonschema's RefResolver,
        # Starlette's test client with httpx): not the user's to see, even under a
        # `filterwarnings = error` of their test suite.
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.filterwarnings("ignore", message="Using `httpx` with `starlette.testclient`")
        from tunnelgw import seeding
        from tunnelgw.seeding import schema

        seeding.check(text, name)
        return schema.parse(text, name).data


def parse_time(value: str) -> datetime:
    return datetime.fromisoformat(value).astimezone(UTC)
