"""The `tunnelgw` command: serve the API, prepare the database, manage accounts and keys."""

from __future__ import annotations

import argparse
import functools
import gc
import json
import logging.config
import os
import shutil
import sys
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from tunnelgw import __version__
from tunnelgw.core import ids
from tunnelgw.core.settings import Settings
from tunnelgw.core.timefmt import rfc3339
from tunnelgw.crypto import keys
from tunnelgw.http.logconfig import log_config
from tunnelgw.migrations import migrate
from tunnelgw.services import accounts, quotas
from tunnelgw.storage import db, records
from tunnelgw.storage.db import Database

# The fixture loader (and with it cryptography) is imported by the commands that load fixtures.


# The fixture loader (and with it `cryptography`) loads only for the commands that use it.

# `serve` flags and the TUNNELGW_* variable each one sets for the worker processes.
SERVE_FLAGS = {
    "host": "TUNNELGW_HOST",
    "port": "TUNNELGW_PORT",
    "workers": "TUNNELGW_WORKERS",
    "database_url": "TUNNELGW_DATABASE_URL",
    "database_pool_size": "TUNNELGW_DATABASE_POOL_SIZE",
    "public_url": "TUNNELGW_PUBLIC_URL",
    "data_dir": "TUNNELGW_DATA_DIR",
    "max_body_bytes": "TUNNELGW_MAX_BODY_BYTES",
    "keep_alive_seconds": "TUNNELGW_KEEP_ALIVE_SECONDS",
    "header_timeout_seconds": "TUNNELGW_HEADER_TIMEOUT_SECONDS",
    "body_timeout_seconds": "TUNNELGW_BODY_TIMEOUT_SECONDS",
    "max_header_bytes": "TUNNELGW_MAX_HEADER_BYTES",
    "max_connections": "TUNNELGW_MAX_CONNECTIONS",
    "log_level": "TUNNELGW_LOG_LEVEL",
    "version_header_alias": "TUNNELGW_VERSION_HEADER_ALIASES",
    "profile": "TUNNELGW_PROFILE",
    "seed": "TUNNELGW_SEED",
    "seed_account": "TUNNELGW_SEED_ACCOUNT",
    "seed_dir": "TUNNELGW_SEED_DIR",
    "deterministic_ids": "TUNNELGW_ID_SEED",
}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tunnelgw", description=__doc__)
    parser.add_argument("--version", action="version", version=f"tunnelgw {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="run the API server (prepares the database first)")
    serve.add_argument("--host", help="listen address (default 127.0.0.1)")
    serve.add_argument("--port", type=int, help="listen port (default 8080)")
    serve.add_argument("--workers", type=int, help="worker processes (default 1)")
    serve.add_argument("--database-url", help="SQLAlchemy URL (default SQLite in the data dir)")
    serve.add_argument(
        "--database-pool-size", type=int, help="PostgreSQL connections per worker (default 32)"
    )
    serve.add_argument("--public-url", help="base URL written into uri fields")
    serve.add_argument("--data-dir", help="directory for the SQLite file (default ./tunnelgw-data)")
    serve.add_argument("--max-body-bytes", type=int, help="request body limit (default 1048576)")
    serve.add_argument("--keep-alive-seconds", type=int, help="idle keep-alive (default 75)")
    serve.add_argument(
        "--header-timeout-seconds", type=float, help="time to send a request's head (default 10)"
    )
    serve.add_argument(
        "--body-timeout-seconds", type=float, help="time to send a request's body (default 60)"
    )
    serve.add_argument(
        "--max-header-bytes", type=int, help="request line and headers limit (default 16384)"
    )
    serve.add_argument(
        "--max-connections", type=int, help="connections per worker, 503 beyond (default 1000)"
    )
    serve.add_argument("--log-level", help="debug, info, warning, error")
    serve.add_argument(
        "--version-header-alias",
        metavar="NAMES",
        help="header names accepted in place of Service-Version (comma-separated)",
    )
    serve.add_argument(
        "--profile",
        choices=("tunnelgw", "platform"),
        help="platform: answer with the platform's error codes, statuses and messages, and "
        "accept its version header (default tunnelgw)",
    )
    serve.add_argument("--json-logs", action="store_true", help="one JSON object per log line")
    serve.add_argument(
        "--admin-api",
        action="store_true",
        help="serve the admin API under /_admin/ (reset, fixtures, clock, faults; accounts with "
        "TUNNELGW_OPERATOR_TOKEN) for tests",
    )
    serve.add_argument("--seed", help="fixture file to load at start, once per account and file")
    serve.add_argument("--seed-account", help="account for --seed (default: the oldest one)")
    serve.add_argument(
        "--seed-dir",
        help="directory of fixture and snapshot files to load at start, in name order, once "
        "per data directory",
    )
    serve.add_argument(
        "--deterministic-ids",
        metavar="SEED",
        help="repeatable ids and tokens for a repeated request sequence (one worker only)",
    )
    serve.set_defaults(run=_serve)

    seed = sub.add_parser("seed", help="load a fixture file (YAML or JSON) into an account")
    seed.add_argument("file", type=Path, help="fixture file")
    seed.add_argument("--account", help="account id (default: the oldest account with an admin)")
    seed.add_argument(
        "--once", action="store_true", help="skip a file already loaded into the account"
    )
    seed.set_defaults(run=_seed)

    reset = sub.add_parser(
        "reset", help="delete every resource of an account; keeps its principals and API keys"
    )
    reset.add_argument("--account", required=True, help="account id (acct_...)")
    reset.add_argument("--yes", action="store_true", help="confirm the deletion")
    reset.set_defaults(run=_reset)

    snap = sub.add_parser(
        "snapshot", help="export an account's whole state as a fixture document (JSON)"
    )
    snap.add_argument("--account", required=True, help="account id (acct_...)")
    snap.add_argument("--output", type=Path, help="write to this file (default: stdout)")
    snap.add_argument(
        "--include-secrets",
        action="store_true",
        help="seal the secrets under this server's key-encryption key instead of leaving them out",
    )
    snap.set_defaults(run=_snapshot)

    migrate_cmd = sub.add_parser("migrate", help="migrate the database to the newest schema")
    migrate_cmd.set_defaults(run=_migrate)

    acc = sub.add_parser("accounts", help="manage accounts").add_subparsers(
        dest="action", required=True
    )
    acc_create = acc.add_parser("create", help="an account with an admin user and admin key")
    acc_create.add_argument("--name", default="")
    acc_create.set_defaults(run=_accounts_create)

    prin = sub.add_parser("principals", help="manage users and bots").add_subparsers(
        dest="action", required=True
    )
    prin_create = prin.add_parser("create", help="a user or bot in an account")
    prin_create.add_argument("--account", required=True, help="account id (acct_...)")
    prin_create.add_argument("--kind", choices=["user", "bot"], default="user")
    prin_create.add_argument("--name", default="")
    prin_create.add_argument("--admin", action="store_true", help="may act for other principals")
    prin_create.set_defaults(run=_principals_create)

    keys = sub.add_parser("keys", help="manage API keys").add_subparsers(
        dest="action", required=True
    )
    keys_create = keys.add_parser("create", help="an API key for a principal; prints its token")
    keys_create.add_argument("--owner", required=True, help="principal id (usr_... or bot_...)")
    keys_create.add_argument("--description", default="")
    keys_create.set_defaults(run=_keys_create)

    issuing = sub.add_parser(
        "issuing-ca", help="print an issuing CA's certificate (PEM); made on first use"
    )
    name_help = "the CA of Kubernetes operator bindings (the default) or certificate management's"
    issuing.add_argument("name", nargs="?", help=f"{name_help} (TUNNELGW_CERTIFICATE_AUTHORITY)")
    issuing.set_defaults(run=_issuing_ca)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    from pydantic import ValidationError

    args = _parser().parse_args(argv)
    run: Callable[[argparse.Namespace], int] = args.run
    try:
        return run(args)
    except ValidationError as exc:  # a setting the server refuses: say which and why
        for error in exc.errors():
            loc = "_".join(map(str, error["loc"])).upper()
            name = f"TUNNELGW_{loc}" if loc else "settings"
            message = error["msg"].removeprefix("Value error, ")
            print(f"tunnelgw: {name}: {message}", file=sys.stderr)
        return 2


def _settings() -> Settings:
    settings = Settings()
    quotas.check_kinds(settings)
    return settings


def _with_database(work: Callable[[Database], Awaitable[Any]], *, isolated: bool = False) -> Any:
    """Run `work` on the configured database, migrated to the newest schema first (by a
    forked child when `isolated`: see tunnelgw.migrations.migrate.upgrade)."""

    settings = _settings()
    settings.data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    migrate.upgrade(settings.resolved_database_url(), isolated=isolated)

    return db.run_with(settings.resolved_database_url(), work)


def _print(data: dict[str, Any]) -> None:
    print(json.dumps(data, indent=2))


def _migrate(_args: argparse.Namespace) -> int:
    settings = _settings()
    settings.data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    revision = migrate.upgrade(settings.resolved_database_url())
    print(f"schema is up to date (revision {revision})")
    return 0


async def _bootstrap(database: Database) -> accounts.Credentials | None:
    settings = _settings()
    async with database.write() as unit:
        created = await accounts.bootstrap(unit, settings.bootstrap_token)
        operator = settings.operator_token
        if operator is not None and await accounts.operator_token_is_a_key(
            unit, operator.get_secret_value()
        ):
            raise SystemExit(
                "tunnelgw: TUNNELGW_OPERATOR_TOKEN is the token of an account's API key; the "
                "operator token must never be one: choose another"
            )
        return created


def _prepare_kek(settings: Settings) -> None:
    """Create the key-encryption key file once, before the workers start (they only read it)."""
    try:
        keys.load_or_create_kek(settings)
    except keys.KekError as exc:
        raise SystemExit(f"tunnelgw: {exc}") from None


def _serve(args: argparse.Namespace) -> int:
    for flag, variable in SERVE_FLAGS.items():
        value = getattr(args, flag)
        if value is not None:
            os.environ[variable] = str(value)
    if args.json_logs:
        os.environ["TUNNELGW_JSON_LOGS"] = "true"
    if args.admin_api:
        os.environ["TUNNELGW_ADMIN_API"] = "true"
    settings = _settings()
    if settings.id_seed and settings.workers > 1:
        print(
            "tunnelgw: --deterministic-ids (TUNNELGW_ID_SEED) needs --workers 1: each worker "
            "process would repeat the same ids, and requests interleave across them",
            file=sys.stderr,
        )
        return 2
    # The bootstrap and the fixture load are the start of the repeatable sequence.
    ids.ensure_seeded(settings.id_seed)
    logging.config.dictConfig(log_config(settings.log_level, json_logs=settings.json_logs))
    # The server lives long: Alembic, needed only to migrate, stays out of it.
    try:
        created = _with_database(_bootstrap, isolated=True)
    except migrate.MigrationError as exc:
        print(f"tunnelgw: the database could not be migrated: {exc}", file=sys.stderr)
        return 1
    _prepare_kek(settings)
    base = settings.resolved_public_url() or f"http://{settings.host}:{settings.port}"
    if created is not None:
        _print_bootstrap(created, base, chosen=settings.bootstrap_token is not None)
    elif settings.id_seed:
        print(
            "tunnelgw: warning: --deterministic-ids on a database that already has accounts: "
            "the ids and tokens of an earlier run with this seed come again and collide with "
            "its rows; start from an empty database for repeatable runs",
            file=sys.stderr,
            flush=True,
        )
    if settings.seed is not None or settings.seed_dir is not None:
        from tunnelgw.seeding import console
    if settings.seed is not None:
        status = console.load_file(settings, settings.seed, settings.seed_account, once=True)
        if status:
            return status
    if settings.seed_dir is not None:
        status = console.load_seed_dir(settings, settings.seed_dir)
        if status:
            return status
    if settings.operator_token is not None and not settings.admin_api:
        print(
            "tunnelgw: warning: TUNNELGW_OPERATOR_TOKEN is set but the admin API is off: "
            "the account operations (/_admin/accounts) are not served (--admin-api)",
            file=sys.stderr,
            flush=True,
        )
    if settings.workers > 1:
        _share_metrics(settings)
    if settings.workers == 1:  # it serves in this process: paused until the app is built
        gc.disable()  # (tunnelgw.worker.create_app enables it again)
    import uvicorn

    from tunnelgw.http import edge

    limits = edge.Limits(
        header_timeout=settings.header_timeout_seconds,
        body_timeout=settings.body_timeout_seconds,
        max_header_bytes=settings.max_header_bytes,
    )
    uvicorn.run(
        "tunnelgw.worker:create_app",
        factory=True,
        host=settings.host,
        port=settings.port,
        workers=settings.workers,
        # uvicorn's httptools protocol with the limits it has no setting for (uvicorn calls
        # the partial as it calls a protocol class; it pickles, for the worker processes).
        http=functools.partial(edge.EdgeProtocol, limits=limits),  # type: ignore[arg-type]
        limit_concurrency=settings.max_connections,
        access_log=False,  # tunnelgw.access writes one line per request instead
        proxy_headers=False,  # X-Forwarded-*: `trusted_proxies` decides, not uvicorn
        ws="none",  # no WebSocket endpoint: "auto" imports websockets (~2.4 MiB) per worker
        log_level=settings.log_level,
        log_config=log_config(settings.log_level, json_logs=settings.json_logs),
        timeout_graceful_shutdown=30,
        timeout_keep_alive=settings.keep_alive_seconds,
    )
    return 0


def _print_bootstrap(created: accounts.Credentials, base: str, *, chosen: bool) -> None:
    """The first start's banner. A generated token is shown this once; a token the operator
    chose (TUNNELGW_BOOTSTRAP_TOKEN) is never written to the log: they have it already."""
    token = "$TUNNELGW_BOOTSTRAP_TOKEN" if chosen else created.token
    shown = "the one TUNNELGW_BOOTSTRAP_TOKEN sets" if chosen else f"(shown once): {created.token}"
    print(
        "tunnelgw: created the first account with an admin API key.\n"
        f"  account {created.account_id}, admin user {created.principal_id}\n"
        f"  token {shown}\n"
        f'  try: curl -H "Authorization: Bearer {token}" '
        f"-H 'Service-Version: 2' {base}/api_keys",
        flush=True,
    )


def _seed(args: argparse.Namespace) -> int:
    settings = _settings()
    settings.data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    migrate.upgrade(settings.resolved_database_url())
    _prepare_kek(settings)
    from tunnelgw.seeding import console

    return console.load_file(settings, args.file, args.account, once=args.once)


def _reset(args: argparse.Namespace) -> int:
    from tunnelgw import seeding

    if not args.yes:
        raise SystemExit(
            f"tunnelgw: reset deletes every resource of account {args.account} (it keeps the "
            "account, its principals and API keys); pass --yes to confirm"
        )

    async def work(database: Database) -> dict[str, int]:
        try:
            return await seeding.reset(database, args.account)
        except LookupError as exc:
            raise SystemExit(f"tunnelgw: {exc}") from None

    counts = _with_database(work)
    _print({"account_id": args.account, "deleted": counts})
    return 0


def _snapshot(args: argparse.Namespace) -> int:
    """Print (or write to `--output`, mode 0600) the account's snapshot document."""
    from tunnelgw.models import Account
    from tunnelgw.services import snapshots

    settings = _settings()
    if args.include_secrets:
        _prepare_kek(settings)

    async def work(database: Database) -> dict[str, Any]:
        async with database.write() as unit:  # one transaction: one state (nothing written)
            if await unit.get(Account, args.account) is None:
                raise SystemExit(f"tunnelgw: no account {args.account!r}")
            taken = await snapshots.take(unit, args.account, include_secrets=args.include_secrets)
        return {"version": 1, "snapshot": taken}

    token = keys.activate(keys.Kek(settings))  # sealing uses the server's KEK
    try:
        document = _with_database(work)
    finally:
        keys.deactivate(token)
    text = json.dumps(document, indent=2, sort_keys=True) + "\n"
    if args.output is None:
        sys.stdout.write(text)
        return 0
    descriptor = os.open(args.output, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as out:
        out.write(text)
    return 0


def _share_metrics(settings: Settings) -> None:
    """Workers write Prometheus samples to one fresh directory, so /metrics sums them all."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        return  # the operator chose a directory
    directory = settings.data_dir / "prometheus"
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(directory)


def _accounts_create(args: argparse.Namespace) -> int:
    async def work(database: Database) -> accounts.Credentials:
        async with database.write() as unit:
            return await accounts.create_account_with_admin(unit, args.name)

    _print(asdict(_with_database(work)))
    return 0


def _principals_create(args: argparse.Namespace) -> int:
    from tunnelgw.models import Account, Principal

    async def work(database: Database) -> dict[str, Any]:
        async with database.write() as unit:
            if await unit.get(Account, args.account) is None:
                raise SystemExit(f"tunnelgw: no account {args.account!r}")
            principal = await accounts.create_principal(
                unit, args.account, args.kind, name=args.name, is_admin=args.admin
            )
            # The operator's principal is never refused; it counts toward the account's quota.
            await quotas.forget(unit, args.account, Principal)
            return {**records.as_dict(principal), "created_at": rfc3339(principal.created_at)}

    _print(_with_database(work))
    return 0


def _keys_create(args: argparse.Namespace) -> int:
    from tunnelgw.models import ApiKey, Principal

    async def work(database: Database) -> dict[str, Any]:
        async with database.write() as unit:
            owner = await unit.get(Principal, args.owner)
            if owner is None:
                raise SystemExit(f"tunnelgw: no principal {args.owner!r}")
            key, token = await accounts.issue_key(unit, owner, description=args.description)
            # The operator's key is never refused; it counts toward the account's quota.
            await quotas.forget(unit, owner.account_id, ApiKey)
            return {"api_key_id": key.id, "owner_id": owner.id, "token": token}

    _print(_with_database(work))
    return 0


def _issuing_ca(args: argparse.Namespace) -> int:
    """Print the certificate of the issuing CA `args.name`, to verify what it signed (e.g.
    `openssl verify -CAfile`); the CA is made, as on first use, if it does not exist yet.
    The store and its tables are imported here: a server never runs this command."""
    from tunnelgw.services import certstore

    settings = _settings()
    names = (certstore.OPERATOR_BINDINGS_CA, settings.certificate_authority)
    name = args.name or names[0]
    if name not in names:
        raise SystemExit(f"tunnelgw: no issuing CA {name!r}; one of: {', '.join(names)}")
    _prepare_kek(settings)

    async def work(database: Database) -> str:
        async with database.write() as unit:
            return (await certstore.issuing_authority(unit, name)).certificate_pem

    token = keys.activate(keys.Kek(settings))  # the CA's key is wrapped under the KEK
    try:
        print(_with_database(work), end="")
    finally:
        keys.deactivate(token)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
