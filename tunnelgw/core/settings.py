"""Configuration: `TUNNELGW_*` environment variables, overridden by `tunnelgw serve` flags."""

from __future__ import annotations

import collections
import functools
import ipaddress
import math
import re
from contextvars import ContextVar, Token
from pathlib import Path
from typing import Literal, Self

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from tunnelgw.core import platform_errors


class Settings(BaseSettings):
    """Every setting of the server; see docs/configuration.md."""

    model_config = SettingsConfigDict(env_prefix="TUNNELGW_", extra="ignore")

    host: str = "127.0.0.1"
    port: int = Field(default=8080, ge=0, le=65535)
    workers: int = Field(default=1, ge=1, le=64)
    data_dir: Path = Path("tunnelgw-data")
    database_url: str | None = None
    # PostgreSQL connections per worker, opened on demand from one: a request holds one from
    # its credential check to the end of its handler, and requests beyond it wait in the pool
    # (docs/configuration.md).
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
    # `platform`: answer as the platform does on the wire where the API document is silent:
    # its version header accepted, its error codes, statuses and messages
    # (tunnelgw.core.platform_errors). `tunnelgw` (default): tunnelgw's own codes.
    profile: Literal["tunnelgw", "platform"] = "tunnelgw"
    json_logs: bool = False
    # `tunnelgw serve` starts itself again as `python -OO` (docstrings and asserts left out:
    # ~5 MiB less per worker). Read by `tunnelgw/__main__.py` before this class is imported,
    # with the same words for false; declared here so that a bad value is refused.
    optimize: bool = True
    # The admin API (`/_admin/`: reset, fixtures, clock, faults) for test suites; off by default.
    admin_api: bool = False
    # With the admin API on: how many of an account's API requests its request journal keeps
    # (`/_admin/requests`), the oldest dropped first; 0 records none.
    journal_max_entries: int = Field(default=1000, ge=0, le=100_000)
    # The first start's admin token, when the operator chooses it (else one is generated): it
    # must be hard to guess (`token_problem`); the server refuses to start otherwise.
    bootstrap_token: str | None = None
    # With the admin API on: the operator's credential, the bearer token of the account
    # operations (`/_admin/accounts`: create, list, delete accounts). Never an account's API
    # key; the same strength rules as the bootstrap token (`token_problem`). Unset: no
    # account operations.
    operator_token: SecretStr | None = None
    # A directory of fixture and snapshot files `tunnelgw serve` loads at start, in name
    # order, once per data directory (tunnelgw.seeding.seeddir, docs/fixtures.md).
    seed_dir: Path | None = None
    # urlsafe base64 of 32 bytes; unset: a key file in the data dir (tunnelgw.crypto.keys).
    key_encryption_key: SecretStr | None = None

    # Reserved domains and agent ingresses (docs/behaviour.md).
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
    # Simulated review of abuse reports: each reported hostname is decided this long after
    # the one before it (the first this long after the report); 0: decided at once.
    abuse_report_review_seconds: int = Field(default=60, ge=0, le=86400 * 30)

    # Simulated agents (docs/admin-api.md): the newest agent version; a tunnel session's update
    # command moves an agent of the same major version that is older to it.
    agent_latest_version: str = Field(default="3.30.0", pattern=r"^[0-9]{1,4}(\.[0-9]{1,4}){1,3}$")

    # Reserved TCP addresses: `<tcp_host_pattern with {region}>.<shared_domain>:<port>`, the
    # port a free one of tcp_port_min..tcp_port_max (docs/behaviour.md).
    tcp_host_pattern: str = "{region}.tcp"
    tcp_port_min: int = Field(default=20000, ge=1, le=65535)
    tcp_port_max: int = Field(default=29999, ge=1, le=65535)

    # The proxies in front of the server (comma-separated addresses or CIDR networks): for a
    # request from one of them, the client address IP restrictions check is taken from
    # `X-Forwarded-For` (the right-most address that is not a trusted proxy). Default none:
    # the peer's address.
    trusted_proxies: str = ""

    # Fixtures (docs/fixtures.md): a file `tunnelgw serve` loads at start,
    # once per (account, SHA-256 of the file); the account defaults to the oldest one with an
    # admin principal.
    seed: Path | None = None
    seed_account: str | None = None

    # Per-account quotas (docs/configuration.md): how many rows of each kind (a table name,
    # tunnelgw.models.QUOTA_KINDS) one account may hold; a create past it is 409
    # ERR_QUOTA_EXCEEDED. `quotas` sets kinds apart from `quota_default`, as comma-separated
    # `kind=N` (setting it replaces its default). High enough that a test suite never meets
    # them; a runaway script does. Reserved addresses are a pool every account draws from:
    # 1000 leave most of a region's 10000 default ports to the others.
    quota_default: int = Field(default=10000, ge=0, le=1_000_000_000)
    quotas: str = "reserved_addr=1000"

    # Event deliveries kept per account (tunnelgw.services.events): past it the oldest go.
    event_deliveries_max: int = Field(default=1000, ge=1, le=1_000_000)

    # Deterministic runs (docs/fixtures.md): repeatable ids and tokens from this seed, per
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

    @field_validator("bootstrap_token")
    @classmethod
    def _chosen_token(cls, value: str | None) -> str | None:
        if not value:
            return None  # unset: a token is generated
        problem = token_problem(value)
        if problem is not None:
            raise ValueError(
                f"{problem}; choose a random one, e.g. the output of "
                "python3 -c 'import secrets; print(secrets.token_urlsafe(32))'"
            )
        return value

    @field_validator("operator_token")
    @classmethod
    def _operator_token(cls, value: SecretStr | None) -> SecretStr | None:
        if value is None or not value.get_secret_value():
            return None
        problem = token_problem(value.get_secret_value())
        if problem is not None:
            raise ValueError(
                f"{problem}; choose a random one, e.g. the output of "
                "python3 -c 'import secrets; print(secrets.token_urlsafe(32))'"
            )
        return value

    @model_validator(mode="after")
    def _operator_apart(self) -> Self:
        token = self.operator_token
        if token is not None and token.get_secret_value() == self.bootstrap_token:
            raise ValueError(
                "TUNNELGW_OPERATOR_TOKEN must not be the bootstrap token: the bootstrap token "
                "becomes an account's API key, and the operator token is never one"
            )
        return self

    @model_validator(mode="after")
    def _port_range(self) -> Self:
        if self.tcp_port_min > self.tcp_port_max:
            raise ValueError("tcp_port_min must not be greater than tcp_port_max")
        return self

    @field_validator("quotas")
    @classmethod
    def _quotas(cls, value: str) -> str:
        parse_quotas(value)
        return value

    def quota(self, kind: str) -> int:
        """How many rows of `kind` (one of tunnelgw.models.QUOTA_KINDS) one account may hold."""
        return parse_quotas(self.quotas).get(kind, self.quota_default)

    def tcp_host(self, region: str) -> str:
        """The host of the reserved TCP addresses of `region`."""
        return f"{self.tcp_host_pattern.format(region=region)}.{self.shared_domain}".lower()

    @field_validator("trusted_proxies")
    @classmethod
    def _proxies(cls, value: str) -> str:
        for part in value.split(","):
            if part.strip():
                try:
                    ipaddress.ip_network(part.strip(), strict=False)
                except ValueError:
                    raise ValueError(f"{part.strip()!r} is not an IP address or network") from None
        return value

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
        aliases = self.version_header_aliases.split(",")
        if self.profile == "platform":  # the header the platform's clients send
            aliases.append(platform_errors.VERSION_HEADER)
        for name in aliases:
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
# A token an operator chooses (TUNNELGW_BOOTSTRAP_TOKEN): visible ASCII, 32 to 512 characters
# (tunnelgw.services.auth.MAX_TOKEN_LENGTH), no repetition of a short part (at least half of
# its 4-character runs differ: "password" * 4 has 28%) and an estimated entropy (its length
# times the Shannon entropy of its own characters) of at least 80 bits ("a" * 40: 0). Blind to
# words and keyboard walks, so no proof of strength; but a random token passes with room to
# spare (32 random hex digits: 90 bits and 90% at the least of 200,000 drawn).
MIN_CHOSEN_TOKEN_LENGTH = 32
MAX_CHOSEN_TOKEN_LENGTH = 512
MIN_CHOSEN_TOKEN_BITS = 80


def token_problem(token: str) -> str | None:
    """Why `token` is not fit to be a chosen admin token, or None when it is."""
    if not all("!" <= char <= "~" for char in token):
        return "the token must be visible ASCII characters (no spaces)"
    if not MIN_CHOSEN_TOKEN_LENGTH <= len(token) <= MAX_CHOSEN_TOKEN_LENGTH:
        return (
            f"the token has {len(token)} characters; it needs {MIN_CHOSEN_TOKEN_LENGTH} to "
            f"{MAX_CHOSEN_TOKEN_LENGTH}"
        )
    runs = [token[i : i + 4] for i in range(len(token) - 3)]
    if len(set(runs)) * 2 < len(runs):
        return "the token repeats itself (a word or pattern over and over)"
    counts = collections.Counter(token).values()
    bits = -sum(n * math.log2(n / len(token)) for n in counts)
    if bits < MIN_CHOSEN_TOKEN_BITS:
        return (
            f"the token is guessable (too few different characters: about {bits:.0f} bits of "
            f"entropy, {MIN_CHOSEN_TOKEN_BITS} needed)"
        )
    return None


@functools.cache
def parse_quotas(value: str) -> dict[str, int]:
    """The per-kind quotas of a `quotas` setting (`kind=N,...`); ValueError names what is
    wrong (a number that is not 0..1000000000). Which kinds there are, the models say: the
    layers that know them check the names (tunnelgw.services.quotas.check_kinds)."""
    found: dict[str, int] = {}
    for part in value.split(","):
        if not part.strip():
            continue
        kind, sep, number = (piece.strip() for piece in part.partition("="))
        if not sep or not number.isascii() or not number.isdigit() or int(number) > 10**9:
            raise ValueError(f"{part.strip()!r}: write {kind}=N, N a whole number 0..1000000000")
        found[kind] = int(number)
    return found


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
