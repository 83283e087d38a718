"""Where the test suite's CPU goes: each test's wall time and the machine's CPU time while it ran (issue #23).

    PYTHONPATH=bench SUITE_CPU_OUT=runs/suite_cpu.jsonl .venv/bin/python -m pytest -p suite_cpu -n 0   # one process
    .venv/bin/python bench/suite_cpu.py runs/suite_cpu.jsonl                                            # the summary

A pytest plugin and its summary. The plugin reads the machine's busy CPU time (``/proc/stat``: every process, the
engines, Slurm jobs and subprocesses a test starts included) before and after each test's set-up, call and
tear-down, and appends one JSON line per test to ``$SUITE_CPU_OUT`` (default ``suite_cpu.jsonl``; a new run starts
it afresh), so an interrupted run still leaves its figures. Run it in one process (``-n 0``) on an otherwise idle machine: with two workers, or
anything else running, a test is charged the CPU of whatever ran beside it. A session fixture's start is charged
to the first test that uses it, its stop to the last test of the run.

The summary prints the run's totals (CPU seconds, wall seconds, the average number of busy cores), the files by
CPU and the 25 costliest tests. The suite's floor on a machine follows from the total: with N cores busy all the
time it cannot take less than CPU / N seconds (plus set-up), whatever the scheduling.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from measure import busy_cpu_seconds


def _out() -> Path:
    return Path(os.environ.get("SUITE_CPU_OUT", "suite_cpu.jsonl"))


def pytest_sessionstart(session):
    _out().write_text("", encoding="utf-8")


def pytest_configure(config):
    """Take bench/ off the ``PYTHONPATH`` the tests' children inherit: the command above puts it there to load this
    plugin, and in a console script started by a test (``judge-serve --help``, a local checkpoint's judge-serve)
    bench/serve.py would then shadow the ``serve`` package, failing tests that pass without the plugin."""
    here = Path(__file__).resolve().parent
    kept = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and Path(p).resolve() != here]
    if kept:
        os.environ["PYTHONPATH"] = os.pathsep.join(kept)
    else:
        os.environ.pop("PYTHONPATH", None)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    cpu, wall = busy_cpu_seconds(), time.monotonic()
    try:
        return (yield)
    finally:
        row = {"id": item.nodeid, "cpu_s": round(busy_cpu_seconds() - cpu, 2), "wall_s": round(time.monotonic() - wall, 2)}
        with _out().open("a", encoding="utf-8") as out:
            out.write(json.dumps(row) + "\n")


def summarize(rows: list[dict], top: int = 25) -> str:
    """The totals, the files by CPU and the ``top`` costliest tests, as text."""
    cpu, wall = sum(r["cpu_s"] for r in rows), sum(r["wall_s"] for r in rows)
    lines = [f"{len(rows)} tests: {cpu:,.0f} CPU-s in {wall:,.0f} s of wall ({cpu / max(wall, 1e-9):.2f} cores busy "
             f"on average); floor on 2 cores: {cpu / 2:,.0f} s"]
    by_file_cpu, by_file_wall = Counter(), Counter()
    for row in rows:
        by_file_cpu[row["id"].split("::")[0]] += row["cpu_s"]
        by_file_wall[row["id"].split("::")[0]] += row["wall_s"]
    lines.append("\nCPU-s   wall-s  file")
    lines += [f"{c:6.1f}  {by_file_wall[f]:6.1f}  {f}" for f, c in by_file_cpu.most_common(top)]
    lines.append("\nCPU-s   wall-s  test")
    lines += [f"{r['cpu_s']:6.1f}  {r['wall_s']:6.1f}  {r['id']}" for r in sorted(rows, key=lambda r: -r["cpu_s"])[:top]]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    rows = [json.loads(line) for line in Path(args[0]).read_text(encoding="utf-8").splitlines() if line]
    print(summarize(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
