"""A/B runs: two builds of tunnelgw (or one build in two settings) measured in turns.

    python bench/ab.py dd0582f                 # that commit (A) against the working tree (B)
    python bench/ab.py 4a5609b HEAD            # two commits
    python bench/ab.py --b-env TUNNELGW_ADMIN_API=1        # the working tree, journal off / on
    python bench/ab.py --b-subscriptions 10                # ... without / with 10 subscriptions
    python bench/ab.py 224fb7a HEAD --subscriptions 10     # two commits, both with 10
    python bench/ab.py dd0582f HEAD --pairs 20 --rounds 3  # short runs in pairs (shared machine)

Each side is installed as a user installs it (`pip install` of its sources into a venv of its
own, cached in ~/.cache/tunnelgw/bench-ab; the working tree's sources are those of
`git stash create`, so uncommitted changes count, untracked files do not) and served from a
neutral folder, so neither imports the other's code. Then, for each round, each side in turn
(the order swapped every round, so a drift of the machine's load falls on both):
start-up to the first answered request on a fresh data dir; then a fresh server, rows seeded
through the API, and the scenarios: GET by id at --connections and at 1 connection, list pages
under rotating cursors, create; and the worker's RSS after them.

With `--pairs N`, a round starts a server of each side at once, and runs each scenario N times
on each, in short runs (`--duration`, 1 s) taken in pairs, A then B or B then A by turns. A
machine whose other tenants come and go within seconds moves the two runs of a pair alike,
where 5-second runs one side after the other caught them on one side only.

Printed: the median of each side and B/A of the medians, then the B/A of each round (each
pair): their median, middle half and range. Timings are never a test verdict: the exit status
says only whether the runs completed.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
sys.path[:0] = [str(BENCH_DIR), str(BENCH_DIR.parent)]

import data  # noqa: E402
import httpx  # noqa: E402
import load  # noqa: E402
import orjson  # noqa: E402
import servers  # noqa: E402
from load import Load, Shape  # noqa: E402

CACHE = Path.home() / ".cache" / "tunnelgw" / "bench-ab"
WORKING_TREE = "WORKTREE"
QUOTA_ENV = {"TUNNELGW_QUOTA_DEFAULT": "1000000000"}
SCENARIOS = ("get", "seq", "listread", "create", "rss", "startup")
# (label, unit, higher is better)
METRICS: dict[str, tuple[str, str, bool]] = {
    "get": ("GET by id, req/s", "req/s", True),
    "seq": ("GET by id, 1 connection, p50 ms", "ms", False),
    "listread": ("list of 100 under rotating cursors, req/s", "req/s", True),
    "create": ("create, req/s", "req/s", True),
    "get_p99": ("GET by id, p99 ms", "ms", False),
    "create_p99": ("create, p99 ms", "ms", False),
    "rss": ("worker RSS after the runs, MiB", "MiB", False),
    "startup": ("start-up to the first answer, fresh data dir, s", "s", False),
}


@dataclass
class Side:
    """One build and its settings, and what was measured of it."""

    label: str
    python: Path
    env: dict[str, str] = field(default_factory=dict)
    subscriptions: int = 0
    results: dict[str, list[float]] = field(default_factory=dict)


# --- builds -------------------------------------------------------------------------------


def _git(*args: str) -> str:
    done = subprocess.run(
        ["git", *args], cwd=BENCH_DIR.parent, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def resolve(rev: str) -> tuple[str, str]:
    """(commit to archive, label) of `rev`; WORKTREE is the working tree's tracked files."""
    if rev == WORKING_TREE:
        return _git("stash", "create") or _git("rev-parse", "HEAD"), "working tree"
    sha = _git("rev-parse", "--verify", f"{rev}^{{commit}}")
    return sha, sha[:7]


def build(commit: str) -> Path:
    """The python of a venv with `commit` installed (cached by the commit's tree)."""
    tree = _git("rev-parse", f"{commit}^{{tree}}")
    home = CACHE / hashlib.sha256(tree.encode()).hexdigest()[:16]
    python = home / "venv" / "bin" / "python"
    if (home / "ready").exists():
        return python
    shutil.rmtree(home, ignore_errors=True)
    source = home / "src"
    source.mkdir(parents=True)
    print(f"ab: building {commit[:7]} in {home} (pip install; once per tree)", flush=True)
    archive = subprocess.run(
        ["git", "archive", commit], cwd=BENCH_DIR.parent, capture_output=True, check=True
    )
    subprocess.run(["tar", "-x", "-C", str(source)], input=archive.stdout, check=True)
    subprocess.run([sys.executable, "-m", "venv", str(home / "venv")], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "-q", str(source)], check=True)
    (home / "ready").write_text(commit + "\n")
    return python


# --- one round of one side ----------------------------------------------------------------


def subscribe(base_url: str, token: str, count: int) -> None:
    """`count` subscriptions to the created event of the bench's resource, each with a
    destination of its own."""
    headers = data.api_headers(token)
    with httpx.Client(base_url=base_url, headers=headers, timeout=data.SEED_TIMEOUT_S) as c:
        for n in range(count):
            made = c.post("/event_destinations", json=data.destination_body(n))
            made.raise_for_status()
            body = data.subscription_body(made.json()["id"])
            c.post("/event_subscriptions", json=body).raise_for_status()


def tag_of(side: Side, round_no: int) -> str:
    """What names the files of `side`'s servers in round `round_no`."""
    return f"{side.label.replace(' ', '-')}-{round_no}"


def measure_startup(side: Side, workdir: Path, tag: str) -> None:
    """Start-up to the first answered request on a fresh data dir."""
    env = {"TUNNELGW_BOOTSTRAP_TOKEN": data.new_token(), **QUOTA_ENV, **side.env}
    command = servers.tunnelgw_command(1, workdir / f"{tag}-startup", python=str(side.python))
    seconds = servers.startup_seconds(command, env, workdir / f"{tag}-startup.log", cwd=workdir)
    side.results.setdefault("startup", []).append(seconds)


@contextmanager
def serving(
    side: Side, args: argparse.Namespace, workdir: Path, tag: str
) -> Iterator[tuple[servers.Server, dict[str, tuple[Load, Shape]]]]:
    """A fresh server of `side`, rows seeded through the API, warmed up; with the load of each
    scenario, `args.duration` seconds long."""
    token = data.new_token()
    env = {"TUNNELGW_BOOTSTRAP_TOKEN": token, **QUOTA_ENV, **side.env}
    command = servers.tunnelgw_command(1, workdir / f"{tag}-data", python=str(side.python))
    log = workdir / f"{tag}.log"
    with servers.serving("tunnelgw", command, env, log, "/readyz", cwd=workdir) as server:
        base = server.base_url
        paths = data.rotating_paths(data.seed_via_api(base, token, args.rows))
        subscribe(base, token, side.subscriptions)
        data.check_answer(base, token, paths[0])
        get = Load(paths, token)
        load.run(args.tool, base, get, Shape(args.warmup, 4))
        concurrent = Shape(args.duration, args.connections, args.threads)
        yield (
            server,
            {
                "get": (get, concurrent),
                "seq": (get, Shape(args.duration, 1, 1)),
                "listread": (data.list_pages(paths, token), concurrent),
                "create": (data.creates(token), concurrent),
            },
        )


def measure_load(
    side: Side, args: argparse.Namespace, server: servers.Server, name: str, run: tuple[Load, Shape]
) -> None:
    """One load run of scenario `name` on `server`, its figure kept."""
    work, shape = run
    stats = load.run(args.tool, server.base_url, work, shape)
    if stats.non_2xx or stats.errors:
        raise RuntimeError(f"{side.label} {name}: {stats.non_2xx} non-2xx, {stats.sample}")
    side.results.setdefault(name, []).append(stats.p50_ms if name == "seq" else stats.rps)
    if f"{name}_p99" in METRICS:  # the tail of the same run (a stall shows there first)
        side.results.setdefault(f"{name}_p99", []).append(stats.p99_ms)


def measure_rss(side: Side, server: servers.Server) -> None:
    rss = sum(p.rss_mib for p in servers.memory(server) if p.role == "worker")
    side.results.setdefault("rss", []).append(rss)


def load_scenarios(args: argparse.Namespace) -> list[str]:
    return [name for name in ("get", "seq", "listread", "create") if name in args.scenarios]


def measure_round(side: Side, args: argparse.Namespace, workdir: Path, round_no: int) -> None:
    """One side's round: its start-up, then a server of its own through each scenario."""
    tag = tag_of(side, round_no)
    if "startup" in args.scenarios:
        measure_startup(side, workdir, tag)
    with serving(side, args, workdir, tag) as (server, runs):
        for name in load_scenarios(args):
            measure_load(side, args, server, name, runs[name])
        if "rss" in args.scenarios:
            measure_rss(side, server)


def measure_paired_round(
    sides: tuple[Side, Side], args: argparse.Namespace, workdir: Path, round_no: int
) -> None:
    """A round with `--pairs`: each side's start-up, then a server of each side up at once and
    each scenario in `--pairs` pairs of short runs, A then B or B then A by turns, so that
    what the machine's other tenants do falls on both sides of a pair alike."""
    tags = [tag_of(side, round_no) for side in sides]
    if "startup" in args.scenarios:
        for index in (0, 1) if round_no % 2 == 0 else (1, 0):
            measure_startup(sides[index], workdir, tags[index])
    with ExitStack() as stack:
        up = [
            stack.enter_context(serving(s, args, workdir, t))
            for s, t in zip(sides, tags, strict=True)
        ]
        for name in load_scenarios(args):
            for pair in range(args.pairs):
                order = (0, 1) if (pair + round_no) % 2 == 0 else (1, 0)
                for index in order:
                    server, runs = up[index]
                    measure_load(sides[index], args, server, name, runs[name])
        if "rss" in args.scenarios:
            for side, (server, _) in zip(sides, up, strict=True):
                measure_rss(side, server)


# --- report -------------------------------------------------------------------------------


def report(a: Side, b: Side, scenarios: list[str]) -> list[dict[str, Any]]:
    """A line per scenario: the medians of each side and B/A of them; then the B/A of each
    round (of each pair with `--pairs`): their median, middle half and range."""
    rows = []
    print(f"\nA = {a.label}, B = {b.label}")
    print(
        f"{'scenario':<52} {'runs':>4} {'A':>8} {'B':>8} {'B/A':>5}"
        "  per round (pair) B/A: median, middle half, range"
    )
    for name in scenarios:
        title, unit, higher = METRICS[name]
        xs, ys = a.results.get(name, []), b.results.get(name, [])
        if not xs or not ys:
            continue
        ma, mb = statistics.median(xs), statistics.median(ys)
        ratios = sorted(y / x for x, y in zip(xs, ys, strict=True) if x)
        quarter = len(ratios) // 4
        middle = f"{ratios[quarter]:.2f}-{ratios[-1 - quarter]:.2f}"
        spread = f"{statistics.median(ratios):.2f}, {middle}, {ratios[0]:.2f}-{ratios[-1]:.2f}"
        digits = 3 if unit in ("ms", "s") else 0 if unit == "req/s" else 1
        sides = f"{ma:>8.{digits}f} {mb:>8.{digits}f}"
        print(f"{title:<52} {len(xs):>4} {sides} {mb / ma:>5.2f}  {spread}")
        rows.append(
            {
                "scenario": name,
                "title": title,
                "higher_is_better": higher,
                "a": xs,
                "b": ys,
                "ratio_of_medians": round(mb / ma, 3),
                "median_ratio": round(statistics.median(ratios), 3),
                "round_ratios": [round(r, 3) for r in ratios],
            }
        )
    return rows


# --- main ---------------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    add = parser.add_argument
    add("a", nargs="?", default=WORKING_TREE, help="commit of side A (default: working tree)")
    add("b", nargs="?", default=WORKING_TREE, help="commit of side B (default: working tree)")
    add("--b-env", action="append", default=[], metavar="K=V", help="a setting of B only")
    add("--b-subscriptions", type=int, default=0, help="event subscriptions on B's account")
    add("--subscriptions", type=int, default=0, help="event subscriptions on both accounts")
    add("--rounds", type=int, default=4, help="rounds; each side once per round (4)")
    add("--duration", type=float, help="seconds per load run (5; with --pairs, 1)")
    add("--pairs", type=int, default=0, help="pairs of short runs per scenario and round (off)")
    add("--warmup", type=float, default=2.0, help="warm-up seconds per server (2)")
    add("--connections", type=int, default=32, help="connections of the concurrent runs (32)")
    add("--threads", type=int, default=2, help="wrk threads (2)")
    add("--rows", type=int, default=1000, help="rows seeded through the API (1000)")
    add("--only", help=f"comma-separated scenarios (default: {','.join(SCENARIOS)})")
    add("--loadgen", choices=("wrk", "python"), default="wrk", help="load generator (wrk)")
    add("--output", type=Path, help="JSON file (default bench/results/ab-<a>-<b>.json)")
    args = parser.parse_args(argv)
    args.scenarios = [s.strip() for s in (args.only or ",".join(SCENARIOS)).split(",")]
    unknown = set(args.scenarios) - set(SCENARIOS)
    if unknown or args.rounds < 1 or args.rows < data.ROTATING_IDS:
        parser.error(f"unknown scenario(s) {sorted(unknown)}, or --rounds < 1, or --rows < 100")
    if args.duration is None:
        args.duration = 1.0 if args.pairs else 5.0
    args.tool = args.loadgen
    if args.tool == "wrk" and shutil.which("wrk") is None:
        parser.error(f"wrk not found: {load.WRK_INSTALL_HINT}; or --loadgen python")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    (commit_a, label_a), (commit_b, label_b) = resolve(args.a), resolve(args.b)
    a = Side(label_a, build(commit_a), subscriptions=args.subscriptions)
    b = Side(label_b, build(commit_b), subscriptions=args.b_subscriptions or args.subscriptions)
    for setting in args.b_env:
        key, _, value = setting.partition("=")
        b.env[key] = value
    for side, settings in (
        (a, [f"{a.subscriptions} subscriptions"] if a.subscriptions else []),
        (b, [*args.b_env, *([f"{b.subscriptions} subscriptions"] if b.subscriptions else [])]),
    ):
        if settings:
            side.label += f" ({', '.join(settings)})"
    if os.getloadavg()[0] > 0.5 * (os.cpu_count() or 1):
        print("ab: WARNING: the machine is busy; the rounds' spread will show it", file=sys.stderr)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="tunnelgw-ab-") as tmp:
        for round_no in range(args.rounds):
            if args.pairs:
                print(f"ab: round {round_no + 1}/{args.rounds}: both sides", flush=True)
                measure_paired_round((a, b), args, Path(tmp), round_no)
                continue
            order = (a, b) if round_no % 2 == 0 else (b, a)
            for side in order:
                print(f"ab: round {round_no + 1}/{args.rounds}: {side.label}", flush=True)
                measure_round(side, args, Path(tmp), round_no)
    tails = [f"{name}_p99" for name in args.scenarios if f"{name}_p99" in METRICS]
    rows = report(a, b, [*args.scenarios, *tails])
    print(f"\n{args.rounds} rounds in {time.monotonic() - started:.0f}s")
    output = args.output or BENCH_DIR / "results" / f"ab-{label_a[:7]}-{label_b[:7]}.json"
    output.parent.mkdir(parents=True, exist_ok=True)
    options = {k: v for k, v in vars(args).items() if k != "output"}
    output.write_bytes(
        orjson.dumps(
            {"a": label_a, "b": b.label, "settings": options, "rows": rows},
            option=orjson.OPT_INDENT_2,
            default=str,
        )
    )
    print(f"results written to {output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
