"""Filter cost on a 100-item page: compile once, match 100 items; median microseconds.

    python bench/filtering.py            # tunnelgw.filtering (cel-rust) on ReservedDomain items
    pip install cel-python && python bench/filtering.py   # adds cel-python on the same work

Not a test; CI does not run it. cel-python runs the same expressions on the same items
(converted with `celpy.json_to_cel`, timestamps as `TimestampType`, `subtract` as a custom
function), with its default interpreted runner.
"""

from __future__ import annotations

import importlib.util
import statistics
import time
from collections.abc import Callable
from contextlib import suppress
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

import yaml

from tunnelgw.filtering import compile_filter

NOW = datetime(2026, 11, 21, 10, 0, tzinfo=UTC)
EXPRESSIONS = [
    'obj.description.startsWith("prod") && obj.metadata.contains("team")',
    'obj.created_at >= timestamp(time.now).subtract("7d")',
    "obj.certificate == null",
    'obj.certificate.id == "cert_5"',
    'obj.region in ["us", "eu"] && obj.domain.endsWith(".example.com")',
]


def item(i: int) -> dict[str, Any]:
    return {
        "id": f"rd_{i:027d}",
        "uri": f"https://api.example.com/reserved_domains/rd_{i:027d}",
        "created_at": (NOW - timedelta(days=i % 14)).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "description": "prod web" if i % 2 else "dev web",
        "metadata": '{"team": "infra"}' if i % 3 else "{}",
        "domain": f"app{i}.example.com",
        "region": ["us", "eu", "ap"][i % 3],
        "cname_target": None,
        "certificate": {"id": f"cert_{i}", "uri": "u"} if i % 4 else None,
    }


def median_us(run: Callable[[], object], rounds: int) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e6


def celpy_page(expression: str, page: list[dict[str, Any]]) -> Callable[[], int]:
    import celpy  # optional
    from celpy import celtypes

    def subtract(when: Any, _: Any) -> Any:
        return when - celtypes.DurationType(seconds=7 * 86400)

    program = celpy.Environment().program(
        celpy.Environment().compile(expression), functions={"subtract": subtract}
    )
    clock = celtypes.MapType({celtypes.StringType("now"): celtypes.TimestampType(NOW)})

    def run() -> int:
        found = 0
        for one in page:
            obj = celpy.json_to_cel(one)
            obj[celtypes.StringType("created_at")] = celtypes.TimestampType(one["created_at"])
            with suppress(celpy.CELEvalError):  # an item it cannot evaluate does not match
                found += bool(program.evaluate({"obj": obj, "time": clock}))
        return found

    return run


def main() -> None:
    spec = yaml.safe_load((Path(__file__).parents[1] / "openapi.yaml").read_text())
    schema = {"$ref": "#/components/schemas/ReservedDomain"}
    page = [item(i) for i in range(100)]
    has_celpy = importlib.util.find_spec("celpy") is not None
    print(f"{'expression':70} {'compile':>8} {'100 items':>10}" + ("  cel-python" * has_celpy))
    for expression in EXPRESSIONS:
        compiled = compile_filter(expression, schema, spec=spec, now=NOW)
        compile_us = median_us(partial(compile_filter, expression, schema, spec=spec), 200)
        match_us = median_us(partial(lambda f: [f.matches(one) for one in page], compiled), 200)
        line = f"{expression:70} {compile_us:8.0f} {match_us:10.0f}"
        if has_celpy:
            line += f"  {median_us(celpy_page(expression, page), 10):10.0f}"
        print(line)


if __name__ == "__main__":
    main()
