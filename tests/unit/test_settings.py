"""Settings: environment variables, defaults and database URL mapping."""

from __future__ import annotations

from pathlib import Path

from tunnelgw.settings import Settings, normal_url


def test_driver_mapping():
    assert normal_url("sqlite:///x.db") == "sqlite:///x.db"
    assert normal_url("postgresql://u@h/db") == "postgresql+psycopg://u@h/db"
    assert normal_url("postgresql+psycopg://u@h/db") == "postgresql+psycopg://u@h/db"
    # URLs naming drivers older versions used still work.
    assert normal_url("sqlite+aiosqlite:///x") == "sqlite:///x"
    assert normal_url("postgres://u@h/db") == "postgresql+psycopg://u@h/db"


def test_defaults_and_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("TUNNELGW_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("TUNNELGW_PUBLIC_URL", "https://api.example.test/")
    monkeypatch.setenv("TUNNELGW_PORT", "9999")
    settings = Settings()
    assert settings.port == 9999
    assert settings.resolved_public_url() == "https://api.example.test"
    assert settings.resolved_database_url() == (
        f"sqlite:///{(Path(tmp_path) / 'tunnelgw.db').resolve()}"
    )
    assert Settings(public_url=None).resolved_public_url() is None
    assert Settings().max_body_bytes == 1024 * 1024
