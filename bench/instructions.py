"""Instructions per create, counted: two builds (or one build without and with subscriptions)
each run bench/inprocess.py under valgrind's callgrind twice, with `--creates` and with
`--creates` + `--more`; the difference of the two runs' instruction counts over `--more` is
what one create costs, start-up and warm-up left out.

    python bench/instructions.py f347c99                 # that commit (A) against the working tree
    python bench/instructions.py HEAD --b-subscriptions 10

An A/B of timings (bench/ab.py) on a machine shared with other tenants can spread by a third
from round to round; an instruction count does not move with them (hash seeds are fixed; the
ids' random bits and the clock still vary a little). It counts this process's instructions
only: not the kernel's (system calls, the disk), not waiting, not the HTTP server. Builds as
bench/ab.py makes them (cached). Needs valgrind (Debian: apt-get install valgrind); ~3
minutes, the runs two at a time on 2 cores.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
sys.path[:0] = [str(BENCH_DIR), str(BENCH_DIR.parent)]

import ab  # noqa: E402
import servers  # noqa: E402

DRIVER = BENCH_DIR / "inprocess.py"
_TOTAL = re.compile(rb"^(?:summary|totals): (\d+)", re.MULTILINE)


def instructions(python: Path, args: argparse.Namespace, subscriptions: int, creates: int) -> int:
    """The instructions callgrind counts in one run of the driver."""
    with tempfile.TemporaryDirectory(prefix="tunnelgw-instructions-") as tmp:
        out = Path(tmp) / "callgrind.out"
        command = [
            *("valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"),
            *(str(python), str(DRIVER), "--subscriptions", str(subscriptions)),
            *("--warmup", str(args.warmup), "--creates", str(creates)),
            *("--concurrency", str(args.concurrency)),
        ]
        env = {**servers.user_environ(), "PYTHONHASHSEED": "0"}
        subprocess.run(command, cwd=tmp, env=env, check=True, capture_output=True)
        found = _TOTAL.search(out.read_bytes())
        if found is None:
            raise RuntimeError(f"no instruction total in {out}")
        return int(found.group(1))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    add = parser.add_argument
    add("a", nargs="?", default=ab.WORKING_TREE, help="commit of side A (default: working tree)")
    add("b", nargs="?", default=ab.WORKING_TREE, help="commit of side B (default: working tree)")
    add("--b-subscriptions", type=int, default=0, help="event subscriptions on B's account")
    add("--warmup", type=int, default=150, help="creates before either count (150)")
    add("--creates", type=int, default=100, help="creates of the shorter run (100)")
    add("--more", type=int, default=300, help="creates the longer run adds (300)")
    add("--concurrency", type=int, default=32, help="creates at a time (32)")
    args = parser.parse_args(argv)
    if shutil.which("valgrind") is None:
        parser.error("valgrind not found (Debian/Ubuntu: apt-get install valgrind)")
    if args.more < 1:
        parser.error("--more must be at least 1")
    (commit_a, label_a), (commit_b, label_b) = ab.resolve(args.a), ab.resolve(args.b)
    sides = [(label_a, ab.build(commit_a), 0), (label_b, ab.build(commit_b), args.b_subscriptions)]
    runs = [
        (python, subscriptions, creates)
        for _, python, subscriptions in sides
        for creates in (args.creates, args.creates + args.more)
    ]
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        counts = list(pool.map(lambda run: instructions(run[0], args, *run[1:]), runs))
    per_create = [(counts[2 * k + 1] - counts[2 * k]) / args.more for k in range(2)]
    for (label, _, subscriptions), value in zip(sides, per_create, strict=True):
        setting = f" ({subscriptions} subscriptions)" if subscriptions else ""
        print(f"{label}{setting}: {value:,.0f} instructions per create")
    print(f"A/B: x{per_create[0] / per_create[1]:.3f} (a throughput ratio: B's speed over A's)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
