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


def test_trusted_proxies_are_addresses_or_networks():
    assert Settings(trusted_proxies="127.0.0.1, 10.0.0.0/8,::1").trusted_proxies
    with pytest.raises(ValidationError, match="not an IP address or network"):
        Settings(trusted_proxies="127.0.0.1, proxy.example.com")


def test_quotas(monkeypatch):
    settings = Settings()
    assert (settings.quota("api_key"), settings.quota("reserved_addr")) == (10000, 1000)
    monkeypatch.setenv("TUNNELGW_QUOTA_DEFAULT", "7")
    monkeypatch.setenv("TUNNELGW_QUOTAS", " api_key = 3 ,edge=0,, ")
    settings = Settings()
    assert (settings.quota("api_key"), settings.quota("edge")) == (3, 0)
    # Setting the variable replaces its default: reserved addresses fall to the default.
    assert settings.quota("reserved_addr") == settings.quota("tls_certificate") == 7


@pytest.mark.parametrize("quotas", ["api_keys=3", "tunnel=1,tunnels=3", "application_user=1"])
def test_quotas_of_unknown_kinds(quotas):
    """The settings read the syntax; the kinds are the models' (QUOTA_KINDS), checked where the
    command line reads the settings and where an app is made."""
    from tunnelgw.http.app import create_app
    from tunnelgw.services.quotas import check_kinds

    unknown = quotas.rsplit(",", 1)[-1].partition("=")[0]
    message = f"'{unknown}' is not a kind of resource with a quota"
    with pytest.raises(ValidationError, match=message):
        check_kinds(Settings(quotas=quotas))
    with pytest.raises(ValidationError, match=message):
        create_app(Settings(quotas=quotas))


@pytest.mark.parametrize(
    ("quotas", "message"),
    [
        ("api_key", "write api_key=N"),
        ("api_key=-1", "write api_key=N"),
        ("api_key=1e3", "write api_key=N"),
        ("api_key=١٢", "write api_key=N"),  # digits, but not ASCII ones
        ("api_key=1000000001", "0..1000000000"),
    ],
)
def test_invalid_quotas(quotas, message):
    with pytest.raises(ValidationError, match=message):
        Settings(quotas=quotas)
    with pytest.raises(ValidationError, match="quota_default"):
        Settings(quota_default=-1)


def test_a_chosen_bootstrap_token_must_be_hard_to_guess(monkeypatch):
    import secrets

    from tunnelgw.core.settings import token_problem

    # Random tokens pass, including the shortest kind (32 hex digits, 128 random bits).
    for _ in range(2000):
        assert token_problem(secrets.token_hex(16)) is None
        assert token_problem(secrets.token_urlsafe(32)) is None
    monkeypatch.setenv("TUNNELGW_BOOTSTRAP_TOKEN", "")
    assert Settings().bootstrap_token is None  # empty is unset: one is generated
    with pytest.raises(ValidationError, match="the token has 1 characters"):
        Settings(bootstrap_token="a")


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
