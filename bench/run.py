"""Benchmark harness: tunnelgw side by side with bare references, Prism and PostgreSQL.

One run measures, on this machine:
- tunnelgw (`python -m tunnelgw serve`, SQLite in a fresh data dir, rows seeded through the
  API), 1 worker: GET by id (over ~100 ids) at --connections and at 1 connection, list of 100,
  create; 2 workers: GET;
- the bare reference (bench/reference_app.py: Starlette + uvicorn + stdlib sqlite3 doing the
  same token lookup and row read) at 1 and 2 workers, and constant JSON (the HTTP layer);
- Prism (npm, cached outside the repo) mocking openapi.yaml;
- the same tunnelgw scenarios on a throwaway PostgreSQL cluster (tests/pgcluster.py);
- start-up to /readyz, RSS per worker, and deep paging over 1,000,000 rows with the plan of
  the server's page SQL;
then prints a table, the issue's targets as PASS/FAIL (never the exit status; timings are not
tests) and writes bench/results/latest.json. `--smoke` runs everything tiny, in seconds,
without wrk or npm (a Python load generator), with no verdicts: tox runs it.

Only 127.0.0.1 is used; every server is stopped by pid (terminate, then kill), also on
errors, Ctrl-C and SIGTERM. See bench/README.md.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
sys.path[:0] = [str(BENCH_DIR), str(BENCH_DIR.parent)]  # bench modules, tests.pgcluster

import data  # noqa: E402
import deep  # noqa: E402
import load  # noqa: E402
import servers  # noqa: E402
from load import Load, Shape  # noqa: E402
from report import Measurement, Report  # noqa: E402

RESULTS_DIR = BENCH_DIR / "results"
PARTS = (
    "get",  # tunnelgw GET by id, --connections
    "seq",  # tunnelgw GET by id, 1 connection
    "list",  # one list URL, read again and again
    "listread",  # list pages under rotating cursors (~90 pages in turn)
    "listmix",  # the same with a create in place of every 10th request
    "create",
    "journal",  # GET and create with the admin API (its request journal) off, then on
    "workers2",  # tunnelgw (and the reference) with 2 workers
    "reference",
    "constant",
    "prism",
    "pg",
    "startup",
    "deep",
)
SINGLE = ("get", "seq", "list", "listread", "listmix", "create")
WRITE_EVERY = 10  # listmix: one create in every WRITE_EVERY requests
# The create scenarios add rows to one account for as long as they run: a quota (default
# 10000 rows of a kind) would end them in 409s. The count behind it still runs on each create.
QUOTA_ENV = {"TUNNELGW_QUOTA_DEFAULT": "1000000000"}
LIST_PATH = data.LIST_PATH
PRISM_WARMUP_S = 5.0  # Node's JIT: Prism serves a third of its speed in its first second
# Sizes of a full run, and of --smoke (flags given explicitly win).
DEFAULTS: dict[str, dict[str, Any]] = {
    "full": {
        "duration": 10.0,
        "warmup": 2.0,
        "connections": 32,
        "rows": 1000,
        "deep_rows": 1_000_000,
        "deep_small_rows": 1000,
        "startup_runs": 3,
    },
    "smoke": {
        "duration": 0.5,
        "warmup": 0.2,
        "connections": 4,
        "rows": 120,
        "deep_rows": 3000,
        "deep_small_rows": 300,  # a full page of 100 from its middle, like the big one
        "startup_runs": 1,
    },
}


# --- command line -------------------------------------------------------------------------


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=(__doc__ or "").split("\n\n")[0],
        epilog=f"parts: {', '.join(PARTS)}",
    )
    add = parser.add_argument
    add("--smoke", action="store_true", help="seconds in total, tiny sizes, no verdicts")
    add("--duration", type=float, help="seconds per load run (10; smoke 0.5)")
    add("--warmup", type=float, help="warm-up seconds per server (2; smoke 0.2)")
    add("--connections", type=int, help="connections of the concurrent runs (32; smoke 4)")
    add("--threads", type=int, default=min(2, os.cpu_count() or 1), help="wrk threads (2)")
    add("--rows", type=int, help="rows seeded through the API (1000; smoke 120)")
    add("--deep-rows", type=int, help="rows of the big deep-paging account (1,000,000)")
    add("--deep-small-rows", type=int, help="rows of the small one (1000)")
    add("--startup-runs", type=int, help="start-ups measured per kind (3; smoke 1)")
    add("--repeat", type=int, default=1, help="runs per scenario; the median one is kept (1)")
    add("--only", help="comma-separated parts to run (default: all)")
    add("--skip", help="comma-separated parts to leave out")
    add("--loadgen", choices=("auto", "wrk", "python"), default="auto", help="load generator")
    add("--output", type=Path, help="JSON file (bench/results/latest.json; smoke: smoke.json)")
    args = parser.parse_args(argv)
    _apply_defaults(args)
    args.parts = _parts(parser, args.only, args.skip)
    positive = (args.duration, args.connections, args.repeat, args.startup_runs)
    if args.rows < data.ROTATING_IDS or min(positive) <= 0:
        parser.error(
            f"--rows must be at least {data.ROTATING_IDS}; --duration, --connections, "
            "--repeat and --startup-runs must be positive"
        )
    return args


def _apply_defaults(args: argparse.Namespace) -> None:
    args.mode = "smoke" if args.smoke else "full"
    for name, value in DEFAULTS[args.mode].items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    if args.output is None:
        args.output = RESULTS_DIR / ("smoke.json" if args.smoke else "latest.json")


def _parts(parser: argparse.ArgumentParser, only: str | None, skip: str | None) -> list[str]:
    def names(text: str | None) -> list[str]:
        found = [n.strip() for n in (text or "").split(",") if n.strip()]
        unknown = sorted(set(found) - set(PARTS))
        if unknown:
            parser.error(f"unknown part(s) {', '.join(unknown)}; parts: {', '.join(PARTS)}")
        return found

    chosen = names(only) or list(PARTS)
    left_out = names(skip)
    return [p for p in PARTS if p in chosen and p not in left_out]


def choose_loadgen(args: argparse.Namespace) -> str | None:
    """ "wrk" or "python"; None (after saying why) when a full run has no wrk."""
    has_wrk = shutil.which("wrk") is not None
    if args.loadgen == "python" or (args.loadgen == "auto" and args.smoke):
        return "python"
    if has_wrk:
        return "wrk"
    print(
        f"bench: wrk not found: {load.WRK_INSTALL_HINT} and retry; or run with --smoke, or "
        "with --loadgen python (a Python load generator on the same cores: slower, so the "
        "ratios are less meaningful).",
        file=sys.stderr,
    )
    return None


# --- the run ------------------------------------------------------------------------------


@dataclass
class Subject:
    """A server under load and what to send it."""

    label: str
    engine: str
    workers: int
    server: servers.Server
    get: Load


class Bench:
    """One run: the settings, the scratch folder and the report being filled."""

    def __init__(self, args: argparse.Namespace, tool: str, workdir: Path) -> None:
        self.args = args
        self.tool = tool
        self.workdir = workdir
        self.report = Report(args.mode)
        self.token = data.new_token()
        self.get_paths: tuple[str, ...] = ()
        self.concurrent = Shape(args.duration, args.connections, args.threads)
        self.sequential = Shape(args.duration, 1, 1)
        self.failed: list[str] = []  # parts that raised (the run goes on without them)

    def wants(self, *parts: str) -> bool:
        return any(part in self.args.parts for part in parts)

    # --- measuring ----------------------------------------------------------------------

    def measure(self, key: str, scenario: str, subject: Subject, work: Load, shape: Shape) -> None:
        print(
            f"  {subject.label} ({subject.engine}, {subject.workers} worker(s)): {scenario}, "
            f"{shape.connections} connection(s) ...",
            flush=True,
        )
        runs = [
            load.run(self.tool, subject.server.base_url, work, shape)
            for _ in range(self.args.repeat)
        ]
        median = sorted(runs, key=lambda stats: stats.rps)[len(runs) // 2]
        self.report.add(
            Measurement(
                key,
                scenario,
                subject.label,
                subject.engine,
                subject.workers,
                shape.connections,
                median,
                [round(stats.rps, 1) for stats in runs],
            )
        )

    def warm_up(self, subject: Subject, at_least: float = 0.0) -> None:
        seconds = self.args.warmup if self.args.smoke else max(self.args.warmup, at_least)
        if seconds > 0:
            load.run(self.tool, subject.server.base_url, subject.get, Shape(seconds, 4))

    def remember_memory(self, subject: Subject) -> None:
        name = f"{subject.label} ({subject.engine}, {subject.workers} worker(s))"
        self.report.memory[name] = servers.memory(subject.server)

    # --- tunnelgw -----------------------------------------------------------------------

    @contextlib.contextmanager
    def tunnelgw(
        self,
        workers: int,
        engine: str,
        url: str | None = None,
        extra_env: dict[str, str] | None = None,
    ) -> Iterator[Subject]:
        """tunnelgw serving the bench data dir (or `url`), seeded on first use."""
        data_dir = self.workdir / f"data-{engine}"
        command = servers.tunnelgw_command(workers, data_dir, url)
        env = {"TUNNELGW_BOOTSTRAP_TOKEN": self.token, **QUOTA_ENV, **(extra_env or {})}
        log = self.workdir / f"tunnelgw-{engine}-{workers}.log"
        with servers.serving("tunnelgw", command, env, log, "/readyz") as server:
            seeded = self.workdir / f"seeded-{engine}"
            if not seeded.exists():
                seeded.write_text("\n".join(self.seed(server, engine)))
            paths = tuple(seeded.read_text().splitlines())
            if engine == "sqlite":
                self.get_paths = paths
            yield Subject("tunnelgw", engine, workers, server, Load(paths, self.token))

    def seed(self, server: servers.Server, engine: str) -> tuple[str, ...]:
        """Rows through the API; the GET paths rotating over them."""
        started = time.monotonic()
        seeded = data.seed_via_api(server.base_url, self.token, self.args.rows)
        print(f"  seeded {len(seeded)} rows ({engine}) in {time.monotonic() - started:.1f}s")
        return data.rotating_paths(seeded)

    def run_single(self, subject: Subject, scenarios: list[str], key_prefix: str = "") -> None:
        """`scenarios` (of SINGLE) on a warmed-up 1-worker server, then its memory."""
        data.check_answer(subject.server.base_url, self.token, subject.get.paths[0])
        self.warm_up(subject)
        runs = {
            "get": ("get", "GET by id", subject.get, self.concurrent),
            "seq": ("get_seq", "GET by id", subject.get, self.sequential),
            "list": ("list", "list of 100", Load((LIST_PATH,), self.token), self.concurrent),
            "listread": (
                "list_read",
                "list of 100, pages read",
                data.list_pages(subject.get.paths, self.token),
                self.concurrent,
            ),
            "listmix": (
                "list_mix",
                f"list of 100 + 1 create in {WRITE_EVERY}",
                Load(
                    data.cursor_list_paths(LIST_PATH, subject.get.paths),
                    self.token,
                    data.CREATE_BYTES,
                    write_every=WRITE_EVERY,
                    write_path=data.API_PATH,
                ),
                self.concurrent,
            ),
            "create": (
                "create",
                "create",
                data.creates(self.token),
                self.concurrent,
            ),
        }
        for scenario in scenarios:
            key, name, work, shape = runs[scenario]
            self.measure(key_prefix + key, name, subject, work, shape)
        self.remember_memory(subject)

    def part_tunnelgw(self) -> None:
        print("== tunnelgw, SQLite, 1 worker", flush=True)
        with self.tunnelgw(1, "sqlite") as subject:
            self.run_single(subject, [p for p in SINGLE if self.wants(p)])

    def part_journal(self) -> None:
        """The request journal's cost: the same server and data with the admin API off, then
        on (each request then commits its journal entry before it is answered), back to back
        so the machine's drift between parts does not enter the ratio. GET at 1 connection
        too: a test suite's requests, one at a time, each wait for a commit of their own."""
        for label, env, suffix in (
            ("off", {}, "_journal_off"),
            ("on", {"TUNNELGW_ADMIN_API": "1"}, "_journal"),
        ):
            print(f"== tunnelgw, SQLite, 1 worker, admin API {label}", flush=True)
            with self.tunnelgw(1, "sqlite", extra_env=env) as subject:
                data.check_answer(subject.server.base_url, self.token, subject.get.paths[0])
                self.warm_up(subject)
                self.measure("get" + suffix, "GET by id", subject, subject.get, self.concurrent)
                self.measure("get_seq" + suffix, "GET by id", subject, subject.get, self.sequential)
                create = data.creates(self.token)
                self.measure("create" + suffix, "create", subject, create, self.concurrent)

    def part_workers2(self) -> None:
        print("== tunnelgw, SQLite, 2 workers", flush=True)
        with self.tunnelgw(2, "sqlite") as subject:
            self.warm_up(subject)
            self.measure("get_2w", "GET by id", subject, subject.get, self.concurrent)
            self.remember_memory(subject)

    # --- references ---------------------------------------------------------------------

    def part_reference(self) -> None:
        db_path = self.workdir / "reference" / "tunnelgw.db"
        db_path.parent.mkdir()
        token, seeded = data.prepare_reference_db(db_path, self.args.rows)
        work = Load(data.rotating_paths(seeded), token)
        env = {"BENCH_REFERENCE_DB": str(db_path)}
        for workers in (1, 2) if self.wants("workers2") else (1,):
            print(f"== bare reference (Starlette + sqlite3), {workers} worker(s)", flush=True)
            command = servers.uvicorn_command("create_app", workers)
            log = self.workdir / f"reference-{workers}.log"
            with servers.serving("reference", command, env, log, "/healthz") as server:
                subject = Subject("bare reference", "sqlite", workers, server, work)
                data.check_answer(server.base_url, token, work.paths[0])
                self.warm_up(subject)
                key = "ref_get" if workers == 1 else "ref_get_2w"
                self.measure(key, "GET by id", subject, work, self.concurrent)

    def part_constant(self) -> None:
        print("== constant JSON (Starlette)", flush=True)
        command = servers.uvicorn_command("create_constant_app", 1)
        work = Load(self.paths_for_others(), self.token)
        log = self.workdir / "constant.log"
        with servers.serving("constant", command, {}, log, "/healthz") as s:
            subject = Subject("constant JSON", "-", 1, s, work)
            self.warm_up(subject)
            self.measure("const_get", "GET by id", subject, work, self.concurrent)

    def paths_for_others(self) -> tuple[str, ...]:
        """GET paths for servers without our data: the seeded ids, or well-formed ones."""
        if self.get_paths:
            return self.get_paths
        from tunnelgw.core import ids

        made = [ids.new_id("bkdhr") for _ in range(data.ROTATING_IDS)]
        return tuple(f"{data.API_PATH}/{id_}" for id_ in made)

    def part_prism(self) -> None:
        print("== Prism mock of openapi.yaml", flush=True)
        if self.args.smoke:
            self.report.note("Prism skipped in --smoke")
            return
        prism, why = servers.ensure_prism()
        if prism is None:
            self.report.note(f"Prism skipped: {why}")
            return
        self.report.info["prism"] = f"{servers.prism_version(prism)}, {why}"
        work = Load(self.paths_for_others(), "bench")
        command = servers.prism_command(prism)
        with servers.serving("prism", command, {}, self.workdir / "prism.log", "/healthz") as s:
            subject = Subject("Prism", "-", 1, s, work)
            data.check_answer(s.base_url, "bench", work.paths[0])
            self.warm_up(subject, at_least=PRISM_WARMUP_S)
            self.measure("prism_get", "GET by id", subject, work, self.concurrent)
            self.remember_memory(subject)

    # --- PostgreSQL ---------------------------------------------------------------------

    def part_pg(self) -> None:
        print("== tunnelgw, PostgreSQL, 1 worker", flush=True)
        from tests import pgcluster

        try:
            binaries = pgcluster.find_binaries()
        except RuntimeError as exc:
            self.report.note(f"PostgreSQL skipped: {exc}")
            return
        self.report.info["postgresql"] = str(binaries)
        with pgcluster.cluster() as base:
            url = pgcluster.create_database(base, "tunnelgw_bench")
            with self.tunnelgw(1, "postgresql", url) as subject:
                self.run_single(subject, ["get", "list", "create"], key_prefix="pg_")
            if self.wants("deep"):
                self.deep_pg(url)

    def deep_pg(self, url: str) -> None:
        layout = deep.Layout.new(self.args.deep_rows, self.args.deep_small_rows)
        print(f"  deep paging on PostgreSQL: inserting {layout.big:,} + {layout.small:,} rows")
        started = time.monotonic()
        accounts = deep.bulk_insert_pg(url, layout)
        print(f"  bulk insert and ANALYZE: {time.monotonic() - started:.1f}s")
        for which, account in enumerate(accounts):
            sql, args = deep.server_page_sql("postgresql", account, layout.middle_ids(which)[0])
            plan = deep.explain_pg(url, ("big", "small")[which], sql, args)
            self.report.plans.append(plan)
            self.report.info[f"pg_page_execution_ms_{plan.account}"] = deep.pg_execution_ms(plan)

    # --- start-up -----------------------------------------------------------------------

    def part_startup(self) -> None:
        print("== start-up to /readyz (tunnelgw, SQLite, 1 worker)", flush=True)
        env = {"TUNNELGW_BOOTSTRAP_TOKEN": self.token, **QUOTA_ENV}
        runs = self.args.startup_runs
        fresh, migrated = [], []
        kept = self.workdir / "startup-kept"
        for n in range(runs):
            data_dir = kept if n == 0 else self.workdir / f"startup-fresh-{n}"
            command = servers.tunnelgw_command(1, data_dir)
            fresh.append(servers.startup_seconds(command, env, self.workdir / "startup.log"))
        for _ in range(runs):
            command = servers.tunnelgw_command(1, kept)
            migrated.append(servers.startup_seconds(command, env, self.workdir / "startup.log"))
        self.report.startup_s = {"migrated": migrated, "fresh": fresh}
        print(f"  median: migrated {statistics.median(migrated):.2f}s, ", end="")
        print(f"fresh {statistics.median(fresh):.2f}s")

    # --- deep paging --------------------------------------------------------------------

    def part_deep(self) -> None:
        layout = deep.Layout.new(self.args.deep_rows, self.args.deep_small_rows)
        print(f"== deep paging, SQLite: {layout.big:,} rows against {layout.small:,}", flush=True)
        data_dir = self.workdir / "data-deep"
        data_dir.mkdir()
        db_path = data_dir / "tunnelgw.db"
        url = data.sqlite_url(db_path)
        from tunnelgw.migrations import migrate

        migrate.upgrade(url)
        creds = data.create_accounts(url, 2)
        started = time.monotonic()
        deep.bulk_insert_sqlite(db_path, layout, [c.account_id for c in creds])
        print(f"  bulk insert: {time.monotonic() - started:.1f}s")
        for which, cred in enumerate(creds):
            sql, args = deep.server_page_sql("sqlite", cred.account_id, layout.middle_ids(which)[0])
            account = ("big", "small")[which]
            self.report.plans.append(deep.explain_sqlite(db_path, account, sql, args))
        command = servers.tunnelgw_command(1, data_dir)
        with servers.serving("tunnelgw", command, {}, self.workdir / "deep.log", "/readyz") as s:
            for which, (key, name) in enumerate((("deep_big", "big"), ("deep_small", "small"))):
                paths = deep.page_paths(layout.middle_ids(which, deep.CURSORS))
                subject = Subject("tunnelgw", "sqlite", 1, s, Load(paths, creds[which].token))
                data.check_answer(s.base_url, creds[which].token, paths[0])
                self.warm_up(subject)
                rows = layout.big if which == 0 else layout.small
                scenario = f"page mid-{name} ({rows:,} rows)"
                self.measure(key, scenario, subject, subject.get, self.sequential)

    # --- all ----------------------------------------------------------------------------

    def run(self) -> None:
        steps = [
            (SINGLE, self.part_tunnelgw),
            (("journal",), self.part_journal),
            (("workers2",), self.part_workers2),
            (("reference",), self.part_reference),
            (("constant",), self.part_constant),
            (("prism",), self.part_prism),
            (("pg",), self.part_pg),
            (("startup",), self.part_startup),
            (("deep",), self.part_deep),
        ]
        for parts, step in steps:
            if not self.wants(*parts):
                continue
            try:
                step()
            except Exception as exc:  # reported; the exit status says so
                self.failed.append(f"{step.__name__}: {exc}")
                print(f"bench: {step.__name__} failed, going on: {exc}", file=sys.stderr)


# --- main ---------------------------------------------------------------------------------


def warn_if_busy() -> float:
    """The figures are only comparable on an otherwise idle machine; say so if it is not."""
    load_now = os.getloadavg()[0]
    if load_now > 0.5 * (os.cpu_count() or 1):
        print(
            f"bench: WARNING: 1-minute load average is {load_now:.2f} before starting; other "
            "processes will skew the figures.",
            file=sys.stderr,
        )
    return load_now


def _interrupt(_signum: int, _frame: Any) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    tool = choose_loadgen(args)
    if tool is None:
        return 2
    signal.signal(signal.SIGTERM, _interrupt)  # stop our servers on SIGTERM as on Ctrl-C
    load_at_start = warn_if_busy()
    print(f"bench: {args.mode} run, parts {','.join(args.parts)}, load generator {tool}")
    import report

    with tempfile.TemporaryDirectory(prefix="tunnelgw-bench-") as tmp:
        bench = Bench(args, tool, Path(tmp))
        try:
            bench.run()
        except KeyboardInterrupt:
            print("bench: interrupted; servers stopped.", file=sys.stderr)
            return 130
    judged = report.print_report(bench.report)
    settings = {k: v for k, v in vars(args).items() if k not in ("output", "smoke")}
    settings["loadgen"] = tool
    report.write_json(args.output, bench.report, judged, settings, load_at_start)
    print(f"\nresults written to {args.output}")
    failed = bench.failed + report.failures(bench.report)
    for line in failed:
        print(f"bench: WARNING: {line}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
