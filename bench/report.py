"""What one benchmark run found: the measurements, the issue's targets judged against them
(PASS/FAIL, never an exit status), the table printed and the JSON written.
"""

from __future__ import annotations

import json
import os
import platform
import shlex
import shutil
import statistics
import subprocess
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from deep import Plan
from load import Stats
from servers import REPO_DIR, ProcessMemory

MIB_LIMIT = 100


@dataclass
class Measurement:
    """One load run: which scenario against which server, and what it gave."""

    key: str  # e.g. "get", "ref_get", "pg_list" (targets look these up)
    scenario: str
    server: str
    engine: str
    workers: int
    connections: int
    stats: Stats  # the median run (by req/s) of the repeats
    repeats_rps: list[float] = field(default_factory=list)  # req/s of every repeat


@dataclass
class Report:
    mode: str  # "full" or "smoke"
    measurements: list[Measurement] = field(default_factory=list)
    startup_s: dict[str, list[float]] = field(default_factory=dict)  # "migrated"/"fresh"
    memory: dict[str, list[ProcessMemory]] = field(default_factory=dict)  # by server label
    plans: list[Plan] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # skipped parts and other remarks
    info: dict[str, Any] = field(default_factory=dict)

    def add(self, measurement: Measurement) -> None:
        self.measurements.append(measurement)

    def get(self, key: str) -> Stats | None:
        found = [m.stats for m in self.measurements if m.key == key]
        return found[-1] if found else None

    def note(self, text: str) -> None:
        print(f"  note: {text}", flush=True)
        self.notes.append(text)


# --- targets ------------------------------------------------------------------------------


def _ratio(report: Report, top: str, bottom: str, attr: str = "rps") -> float | None:
    a, b = report.get(top), report.get(bottom)
    if a is None or b is None or not getattr(b, attr):
        return None
    value: float = getattr(a, attr) / getattr(b, attr)
    return value


def _attr(report: Report, key: str, attr: str) -> float | None:
    stats = report.get(key)
    return None if stats is None else float(getattr(stats, attr))


def _median_startup(report: Report, kind: str) -> float | None:
    samples = report.startup_s.get(kind)
    return statistics.median(samples) if samples else None


def _max_worker_rss(report: Report) -> float | None:
    """The largest tunnelgw worker (Prism's process is listed beside it, not judged)."""
    values = [
        p.rss_mib
        for server, procs in report.memory.items()
        if server.startswith("tunnelgw")
        for p in procs
        if p.role == "worker"
    ]
    return max(values) if values else None


@dataclass(frozen=True)
class Target:
    name: str
    value: Callable[[Report], float | None]
    op: str  # ">=" or "<="
    threshold: float
    unit: str  # "x", "ms", "s", "MiB"

    def judge(self, report: Report) -> dict[str, Any]:
        value = self.value(report)
        verdict = "n/a"
        if value is not None:
            ok = value >= self.threshold if self.op == ">=" else value <= self.threshold
            verdict = "PASS" if ok else "FAIL"
        return {
            "target": self.name,
            "value": None if value is None else round(value, 3),
            "goal": f"{self.op} {self.threshold:g}{self.unit}",
            "unit": self.unit,
            "verdict": verdict,
        }


# The targets of issue 17 (the layered house must not cost speed); issue 9's, which they
# tighten, are in bench/README.md's earlier figures.
TARGETS = (
    Target("GET req/s / bare reference", lambda r: _ratio(r, "get", "ref_get"), ">=", 0.5, "x"),
    Target("GET req/s / Prism", lambda r: _ratio(r, "get", "prism_get"), ">=", 4.0, "x"),
    Target("GET p99 (concurrent run)", lambda r: _attr(r, "get", "p99_ms"), "<=", 15, "ms"),
    Target("GET req/s, concurrent / 1 conn", lambda r: _ratio(r, "get", "get_seq"), ">=", 1.0, "x"),
    Target("sequential GET p50", lambda r: _attr(r, "get_seq", "p50_ms"), "<=", 0.3, "ms"),
    Target(
        "list of 100, rotating cursors / GET req/s",
        lambda r: _ratio(r, "list_read", "get"),
        ">=",
        0.35,
        "x",
    ),
    Target("create / GET req/s", lambda r: _ratio(r, "create", "get"), ">=", 0.4, "x"),
    # Issue 23: the request journal (admin API on) costs GET at most 10%.
    Target(
        "GET, journal on / off",
        lambda r: _ratio(r, "get_journal", "get_journal_off"),
        ">=",
        0.9,
        "x",
    ),
    Target("GET, 2 workers / 1 worker", lambda r: _ratio(r, "get_2w", "get"), ">=", 1.6, "x"),
    Target("GET, PostgreSQL / SQLite", lambda r: _ratio(r, "pg_get", "get"), ">=", 0.5, "x"),
    Target("start-up to /readyz (median)", lambda r: _median_startup(r, "migrated"), "<=", 1, "s"),
    Target("RSS per worker (max)", _max_worker_rss, "<=", MIB_LIMIT, "MiB"),
    Target(
        "deep page / small-account page p50",
        lambda r: _ratio(r, "deep_big", "deep_small", "p50_ms"),
        "<=",
        1.3,
        "x",
    ),
)

# Figures printed beside the targets, with no threshold of their own.
CONTEXT: tuple[tuple[str, Callable[[Report], float | None], str], ...] = (
    ("GET req/s / constant JSON", lambda r: _ratio(r, "get", "const_get"), "x"),
    ("bare reference req/s / constant JSON", lambda r: _ratio(r, "ref_get", "const_get"), "x"),
    ("GET 2 workers / bare reference 2 workers", lambda r: _ratio(r, "get_2w", "ref_get_2w"), "x"),
    ("bare reference, 2 workers / 1 worker", lambda r: _ratio(r, "ref_get_2w", "ref_get"), "x"),
    ("GET p50 / bare reference p50", lambda r: _ratio(r, "get", "ref_get", "p50_ms"), "x"),
    ("list of 100, one URL / GET req/s", lambda r: _ratio(r, "list", "get"), "x"),
    ("list of 100 + creates / GET req/s", lambda r: _ratio(r, "list_mix", "get"), "x"),
    ("list, PostgreSQL / SQLite pages read", lambda r: _ratio(r, "pg_list", "list_read"), "x"),
    ("create, PostgreSQL / SQLite", lambda r: _ratio(r, "pg_create", "create"), "x"),
    ("create, journal on / off", lambda r: _ratio(r, "create_journal", "create_journal_off"), "x"),
    (
        "sequential GET p50, journal on / off",
        lambda r: _ratio(r, "get_seq_journal", "get_seq_journal_off", "p50_ms"),
        "x",
    ),
    ("start-up on a fresh data dir (median)", lambda r: _median_startup(r, "fresh"), "s"),
)


def judge(report: Report) -> list[dict[str, Any]]:
    return [target.judge(report) for target in TARGETS]


def context(report: Report) -> list[dict[str, Any]]:
    found = []
    for name, compute, unit in CONTEXT:
        value = compute(report)
        if value is not None:
            found.append({"figure": name, "value": round(value, 3), "unit": unit})
    return found


# --- printing -----------------------------------------------------------------------------


def _columns(head: tuple[str, ...], rows: list[tuple[Any, ...]], left: int = 1) -> list[str]:
    """Rows as aligned text: the first `left` columns left-aligned, the rest right-aligned."""
    cells = [head, *[tuple(str(v) for v in row) for row in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(head))]

    def line(row: tuple[str, ...]) -> str:
        parts = [
            v.ljust(w) if i < left else v.rjust(w)
            for i, (v, w) in enumerate(zip(row, widths, strict=True))
        ]
        return "  ".join(parts).rstrip()

    header = line(head)
    return [header, "-" * len(header), *(line(row) for row in cells[1:])]


def measurements_table(report: Report) -> str:
    head = (
        *("scenario", "server", "engine", "workers", "conns"),
        *("req/s", "p50 ms", "p99 ms", "non-2xx", "errors"),
    )
    rows = [
        (
            m.scenario,
            m.server,
            m.engine,
            m.workers,
            m.connections,
            f"{m.stats.rps:.0f}",
            f"{m.stats.p50_ms:.2f}",
            f"{m.stats.p99_ms:.2f}",
            m.stats.non_2xx,
            m.stats.errors,
        )
        for m in report.measurements
    ]
    return "\n".join(_columns(head, rows, left=3))


def _shown(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    return f"x{value:.2f}" if unit == "x" else f"{value:.2f} {unit}"


def targets_table(report: Report, judged: list[dict[str, Any]]) -> str:
    smoke = report.mode == "smoke"
    rows = [
        (
            t["target"],
            _shown(t["value"], t["unit"]),
            t["goal"],
            "(smoke)" if smoke and t["verdict"] != "n/a" else t["verdict"],
        )
        for t in judged
    ]
    return "\n".join(_columns(("target (issue 17)", "value", "goal", "verdict"), rows))


def extras_text(report: Report) -> str:
    lines = []
    for kind, samples in report.startup_s.items():
        shown = ", ".join(f"{s:.2f}" for s in samples)
        lines.append(f"start-up to /readyz, {kind} data dir: {shown} s")
    for server, procs in report.memory.items():
        shown = ", ".join(f"{p.role} {p.rss_mib:.0f}" for p in procs)
        lines.append(f"RSS after the run, {server}: {shown} MiB")
    for figure in context(report):
        lines.append(f"{figure['figure']}: {_shown(figure['value'], figure['unit'])}")
    shown_sql = set()
    for plan in report.plans:
        if plan.engine not in shown_sql:
            shown_sql.add(plan.engine)
            lines.append(f"the server's page SQL ({plan.engine}): {plan.sql}")
        lines.append(f"query plan ({plan.engine}, {plan.account} account):")
        lines += [f"    {line}" for line in plan.summary()]
        if plan.flags:
            lines.append(f"  WARNING: not the index search expected: {'; '.join(plan.flags)}")
    lines += [f"note: {note}" for note in report.notes]
    return "\n".join(lines)


def print_report(report: Report) -> list[dict[str, Any]]:
    judged = judge(report)
    print()
    print(measurements_table(report))
    print()
    print(extras_text(report))
    print()
    print(targets_table(report, judged))
    if report.mode == "smoke":
        print("(smoke run: tiny sizes, no verdicts; run without --smoke for real figures)")
    return judged


def failures(report: Report) -> list[str]:
    """Runs that got non-2xx answers, errors or no answers at all (the figures are void)."""
    found = []
    for m in report.measurements:
        s = m.stats
        if s.non_2xx or s.errors or not s.requests:
            found.append(
                f"{m.scenario} on {m.server} ({m.engine}, {m.workers} worker(s)): "
                f"{s.requests} answers, {s.non_2xx} non-2xx, {s.errors} errors; "
                f"first: {s.sample or '-'}"
            )
    return found


# --- JSON ---------------------------------------------------------------------------------


def _output(*argv: str) -> str:
    """What a tool prints ("" when it is missing or fails to start)."""
    if shutil.which(argv[0]) is None:
        return ""
    try:
        done = subprocess.run(
            argv, cwd=REPO_DIR, capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout.strip()


def machine(load_at_start: float) -> dict[str, Any]:
    meminfo = Path("/proc/meminfo").read_text().splitlines()[0].split()
    return {
        "cpus": os.cpu_count(),
        "mem_total_kib": int(meminfo[1]),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "wrk": _output("wrk", "--version").split("\n")[0] or None,
        "loadavg_1m_at_start": round(load_at_start, 2),
        "loadavg_1m_at_end": round(os.getloadavg()[0], 2),
    }


def write_json(
    path: Path,
    report: Report,
    judged: list[dict[str, Any]],
    settings: dict[str, Any],
    load_at_start: float,
) -> None:
    data = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": shlex.join(["python", *sys.argv]),
        "mode": report.mode,
        "machine": machine(load_at_start),
        "git": {
            "commit": _output("git", "rev-parse", "HEAD") or None,
            "dirty": bool(_output("git", "status", "--porcelain", "--", ".", ":!bench")),
        },
        "settings": settings,
        "measurements": [{**asdict(m), "rps": round(m.stats.rps, 1)} for m in report.measurements],
        "targets": judged,
        "context": context(report),
        "startup_s": report.startup_s,
        "memory_mib": {k: [asdict(p) for p in v] for k, v in report.memory.items()},
        "plans": [asdict(p) for p in report.plans],
        "notes": report.notes,
        "info": report.info,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, default=str) + "\n")
