"""Settings: environment variables, defaults and database URL mapping."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from tunnelgw.core.settings import Settings, normal_url


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


def test_tcp_address_settings(monkeypatch):
    settings = Settings()
    assert (settings.tcp_port_min, settings.tcp_port_max) == (20000, 29999)
    assert settings.tcp_host("eu") == "eu.tcp.tunnelgw.test"
    monkeypatch.setenv("TUNNELGW_TCP_HOST_PATTERN", "TCP-{region}.Edge")
    monkeypatch.setenv("TUNNELGW_SHARED_DOMAIN", "example.net")
    monkeypatch.setenv("TUNNELGW_TCP_PORT_MIN", "1")
    monkeypatch.setenv("TUNNELGW_TCP_PORT_MAX", "1")
    settings = Settings()
    assert settings.tcp_host("us") == "tcp-us.edge.example.net"
    assert (settings.tcp_port_min, settings.tcp_port_max) == (1, 1)
    assert Settings(tcp_host_pattern="tcp").tcp_host("jp") == "tcp.example.net"


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"tcp_host_pattern": "{zone}.tcp"}, "only placeholder"),
        ({"tcp_host_pattern": "{region"}, "only placeholder"),
        ({"tcp_host_pattern": "*.tcp"}, "not DNS labels"),
        ({"tcp_host_pattern": "tcp..{region}"}, "not DNS labels"),
        ({"tcp_host_pattern": "-tcp"}, "not DNS labels"),
        ({"tcp_port_min": 30000, "tcp_port_max": 29999}, "must not be greater"),
        ({"tcp_port_min": 0}, "greater than or equal to 1"),
        ({"tcp_port_max": 65536}, "less than or equal to 65535"),
    ],
)
def test_invalid_tcp_address_settings(fields, message):
    with pytest.raises(ValidationError, match=message):
        Settings(**fields)


def test_database_pool_size(monkeypatch):
    from tunnelgw.http.app import create_app, state_of
    from tunnelgw.storage import db

    assert Settings().database_pool_size == db.POOL_MAX_SIZE == 32
    monkeypatch.setenv("TUNNELGW_DATABASE_POOL_SIZE", "5")
    settings = Settings()
    assert settings.database_pool_size == 5
    assert state_of(create_app(settings)).database.pool_size == 5
    for bad in ("0", "1001", "many"):
        monkeypatch.setenv("TUNNELGW_DATABASE_POOL_SIZE", bad)
        with pytest.raises(ValidationError, match="database_pool_size"):
            Settings()


def test_http_edge_limits(monkeypatch):
    settings = Settings()
    assert (settings.header_timeout_seconds, settings.body_timeout_seconds) == (10.0, 60.0)
    assert (settings.max_header_bytes, settings.max_connections) == (16384, 1000)
    monkeypatch.setenv("TUNNELGW_HEADER_TIMEOUT_SECONDS", "0.5")
    monkeypatch.setenv("TUNNELGW_MAX_HEADER_BYTES", "4096")
    assert (Settings().header_timeout_seconds, Settings().max_header_bytes) == (0.5, 4096)
    for name, value in [
        ("header_timeout_seconds", 0),
        ("body_timeout_seconds", -1),
        ("max_header_bytes", 100),  # not even a request line with an Authorization header
        ("max_connections", 0),
    ]:
        with pytest.raises(ValidationError):
            Settings(**{name: value})
