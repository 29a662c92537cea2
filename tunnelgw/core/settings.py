"""Configuration: `TUNNELGW_*` environment variables, overridden by `tunnelgw serve` flags."""

from __future__ import annotations

import re
from contextvars import ContextVar, Token
from pathlib import Path
from typing import Self

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    """Every setting of the server; see the README's configuration table."""

    model_config = SettingsConfigDict(env_prefix="TUNNELGW_", extra="ignore")

    host: str = "127.0.0.1"
    port: int = Field(default=8080, ge=0, le=65535)
    workers: int = Field(default=1, ge=1, le=64)
    data_dir: Path = Path("tunnelgw-data")
    database_url: str | None = None
    # PostgreSQL connections per worker, opened on demand from one: a request holds one from
    # its credential check to the end of its handler, and requests beyond it wait in the pool
    # (README: Configuration).
    database_pool_size: int = Field(
        default=32, ge=1, le=1000
    )  # = tunnelgw.storage.db.POOL_MAX_SIZE
    public_url: str | None = None
    max_body_bytes: int = Field(default=1024 * 1024, ge=1024)
    # Longer than clients' and load balancers' idle timeouts (httpx 5 s, nginx 60-75 s), so a
    # client never sends on a connection the server is closing at that moment.
    keep_alive_seconds: int = Field(default=75, ge=1, le=3600)
    # Limits at the HTTP edge (tunnelgw.http.edge, README: Configuration): time for a request's
    # line and headers from its first byte (a new connection's from its opening), time for its
    # body from then, the size of its line and headers (431 beyond), and connections (or
    # requests in flight) per worker past which a request is answered 503.
    header_timeout_seconds: float = Field(default=10.0, gt=0, le=3600)
    body_timeout_seconds: float = Field(default=60.0, gt=0, le=3600)
    max_header_bytes: int = Field(default=16 * 1024, ge=1024, le=1024 * 1024)
    max_connections: int = Field(default=1000, ge=1, le=1_000_000)
    log_level: str = "info"
    # More header names accepted in place of `Service-Version` (comma-separated), same value
    # rule: for client libraries that send the version under another name. Default none.
    version_header_aliases: str = ""
    json_logs: bool = False
    # The admin API (`/_admin/`: reset, fixtures, clock, faults) for test suites; off by default.
    admin_api: bool = False
    bootstrap_token: str | None = None
    # urlsafe base64 of 32 bytes; unset: a key file in the data dir (tunnelgw.crypto.keys).
    key_encryption_key: SecretStr | None = None

    # Reserved domains and agent ingresses (see the README's "Domains" section).
    # A reserved name without a dot is `<name>.<shared_domain>`.
    shared_domain: str = "tunnelgw.test"
    # Custom domains get `cname_target` `<random>.<cname_suffix>`; wildcard custom domains get
    # `acme_challenge_cname_target` `<random>.<acme_challenge_suffix>`.
    cname_suffix: str = "cname.tunnelgw.test"
    acme_challenge_suffix: str = "acme.tunnelgw.test"
    # Agent ingress `ns_targets`, comma-separated.
    ns_targets: str = "ns1.tunnelgw.test,ns2.tunnelgw.test,ns3.tunnelgw.test,ns4.tunnelgw.test"
    # The one ACME authority name a certificate management policy may name.
    certificate_authority: str = "letsencrypt"
    # Simulated certificate management: a provisioning job completes this long after it
    # starts; a failed job is retried after `certificate_retry_seconds`.
    certificate_issue_delay_seconds: float = Field(default=5.0, ge=0, le=86400)
    certificate_retry_seconds: int = Field(default=300, ge=1, le=86400 * 30)
    certificate_validity_days: int = Field(default=90, ge=2, le=825)
    certificate_renew_before_days: int = Field(default=30, ge=1, le=824)

    # Reserved TCP addresses: `<tcp_host_pattern with {region}>.<shared_domain>:<port>`, the
    # port a free one of tcp_port_min..tcp_port_max (see the README's "Reserved addresses").
    tcp_host_pattern: str = "{region}.tcp"
    tcp_port_min: int = Field(default=20000, ge=1, le=65535)
    tcp_port_max: int = Field(default=29999, ge=1, le=65535)

    # Fixtures (see the README's "Fixtures" section): a file `tunnelgw serve` loads at start,
    # once per (account, SHA-256 of the file); the account defaults to the oldest one with an
    # admin principal.
    seed: Path | None = None
    seed_account: str | None = None

    # Deterministic runs (see the README): repeatable ids and tokens from this seed, per
    # process (tunnelgw.core.ids); `serve` refuses it with several workers.
    id_seed: str | None = None

    @field_validator("tcp_host_pattern")
    @classmethod
    def _host_pattern(cls, value: str) -> str:
        try:
            sample = value.format(region="us")
        except (KeyError, IndexError, ValueError):
            raise ValueError("the only placeholder a TCP host pattern takes is {region}") from None
        if not _HOST_LABELS.fullmatch(sample):
            raise ValueError(
                f"{value!r} is not DNS labels (letters, digits, inner hyphens) with {{region}}"
            )
        return value.lower()

    @model_validator(mode="after")
    def _port_range(self) -> Self:
        if self.tcp_port_min > self.tcp_port_max:
            raise ValueError("tcp_port_min must not be greater than tcp_port_max")
        return self

    def tcp_host(self, region: str) -> str:
        """The host of the reserved TCP addresses of `region`."""
        return f"{self.tcp_host_pattern.format(region=region)}.{self.shared_domain}".lower()

    @field_validator("version_header_aliases")
    @classmethod
    def _header_names(cls, value: str) -> str:
        for name in value.split(","):
            if name.strip() and not _TOKEN.fullmatch(name.strip()):
                raise ValueError(f"{name.strip()!r} is not an HTTP header name")
        return value

    def version_header_alias_list(self) -> list[str]:
        """The alias header names, lower-case, without duplicates or `Service-Version`."""
        names: list[str] = []
        for name in self.version_header_aliases.split(","):
            name = name.strip().lower()
            if name and name != "service-version" and name not in names:
                names.append(name)
        return names

    def ns_target_list(self) -> list[str]:
        return [host.strip() for host in self.ns_targets.split(",") if host.strip()]

    def resolved_database_url(self) -> str:
        """The database URL: the configured one, or SQLite in the data directory."""
        url = self.database_url or f"sqlite:///{(self.data_dir / 'tunnelgw.db').resolve()}"
        return normal_url(url)

    def resolved_public_url(self) -> str | None:
        """The public base URL without a trailing slash, or None to use the request's."""
        return self.public_url.rstrip("/") if self.public_url else None


_HOST_LABELS = re.compile(
    r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*"
)
# An HTTP header name (RFC 9110 token).
_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")

# The SQLAlchemy URL of each database (older URLs naming other drivers still work): the
# server runs SQLite on stdlib sqlite3 and PostgreSQL on asyncpg (tunnelgw.storage.db, which
# takes the host, port, user and database from it); Alembic's migrations run on psycopg 3.
_DRIVERS = {
    "sqlite+aiosqlite": "sqlite",
    "sqlite+pysqlite": "sqlite",
    "postgresql": "postgresql+psycopg",
    "postgres": "postgresql+psycopg",
    "postgresql+psycopg2": "postgresql+psycopg",
    "postgresql+asyncpg": "postgresql+psycopg",
}


def normal_url(url: str) -> str:
    """`url` naming the synchronous driver we ship (`postgresql://` ->
    `postgresql+psycopg://`), as Alembic takes it."""
    scheme, sep, rest = url.partition("://")
    return f"{_DRIVERS.get(scheme, scheme)}{sep}{rest}"


# The settings of the app serving the current request (set by tunnelgw.http for each request),
# and the process default for code outside requests (the CLI, scripts, tests).
_active: ContextVar[Settings | None] = ContextVar("tunnelgw_settings", default=None)
_default: Settings | None = None


def use(settings: Settings) -> Settings:
    """Make `settings` the process default (for code that runs outside a request: the CLI,
    scripts, tests); apps hold their own (tunnelgw.http.state)."""
    global _default
    _default = settings
    return settings


def activate(settings: Settings) -> Token[Settings | None]:
    """Make `settings` the current ones for this task (and the tasks it starts)."""
    return _active.set(settings)


def deactivate(token: Token[Settings | None]) -> None:
    _active.reset(token)


def current() -> Settings:
    """The settings of the app serving the current request; outside a request the process
    default (defaults and environment when none was installed)."""
    active = _active.get()
    if active is not None:
        return active
    return _default if _default is not None else use(Settings())
