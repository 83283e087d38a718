"""Where the test suite's CPU goes: each test's wall time and the machine's CPU time while it ran.

    PYTHONPATH=bench SUITE_CPU_OUT=runs/suite_cpu.jsonl .venv/bin/python -m pytest -p suite_cpu -n 0   # one process
    .venv/bin/python bench/suite_cpu.py runs/suite_cpu.jsonl                                            # the summary
    PYTHONPATH=bench SUITE_CPU_OUT=runs/suite_n2.jsonl .venv/bin/python -m pytest -p suite_cpu -n 2 --dist loadgroup

A pytest plugin and its summary. The plugin reads the machine's busy CPU time (``/proc/stat``: every process, the
engines, Slurm jobs and subprocesses a test starts included) before and after each test's set-up, call and
tear-down, and appends one JSON line per test to ``$SUITE_CPU_OUT`` (default ``suite_cpu.jsonl``; a new run starts
it afresh), so an interrupted run still leaves its figures. For what each test costs, run it in one process
(``-n 0``) on an otherwise idle machine: with two workers, or anything else running, a test is charged the CPU of
whatever ran beside it. A session fixture's start is charged to the first test that uses it, its stop to the last
test of the run (of its worker, under xdist).

The summary prints the run's totals (CPU seconds, wall seconds, the average number of busy cores), the files by
CPU and the 25 costliest tests. The suite's floor on a machine follows from the total: with N cores busy all the
time it cannot take less than CPU / N seconds (plus set-up), whatever the scheduling.

Under xdist (``-n 2 --dist loadgroup``, as ``make test`` runs it) a test's CPU is the machine's, its neighbour's
included, so the summary answers the other question instead: how far the run is from that floor, and where. It
prints each worker's first start and last end (a late finisher leaves a core idle at the end), the machine's idle
core-seconds between the first start and the last end, and the tests the machine idled most beside (``cores x
wall - CPU`` while each ran: shared between two tests that ran side by side, so a pointer, not an account).
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


def pytest_configure(config):
    """Start the file afresh (in the controller: xdist workers append to it), and take bench/ off the
    ``PYTHONPATH`` the tests' children inherit: the command above puts it there to load this plugin, and in a console
    script started by a test (``judge-serve --help``, a local checkpoint's judge-serve) bench/serve.py would then
    shadow the ``serve`` package, failing tests that pass without the plugin. An xdist controller keeps it: its
    workers, started after this, load the plugin from it (and take it off themselves)."""
    worker = hasattr(config, "workerinput")
    if not worker:
        _out().write_text("", encoding="utf-8")
    if not worker and getattr(config.option, "numprocesses", None):
        return
    here = Path(__file__).resolve().parent
    kept = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and Path(p).resolve() != here]
    if kept:
        os.environ["PYTHONPATH"] = os.pathsep.join(kept)
    else:
        os.environ.pop("PYTHONPATH", None)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    cpu, start = busy_cpu_seconds(), time.time()  # the epoch clock: workers' rows are put on one time line
    try:
        return (yield)
    finally:
        end = time.time()
        row = {"id": item.nodeid, "cpu_s": round(busy_cpu_seconds() - cpu, 2), "wall_s": round(end - start, 2),
               "worker": os.environ.get("PYTEST_XDIST_WORKER", "main"), "start": round(start, 3), "end": round(end, 3),
               "busy_at_start": round(cpu, 2), "cores": len(os.sched_getaffinity(0))}  # fmt: skip
        with _out().open("a", encoding="utf-8") as out:
            out.write(json.dumps(row) + "\n")


def summarize(rows: list[dict], top: int = 25) -> str:
    """The totals, the files by CPU and the ``top`` costliest tests, as text; for a run with several xdist workers,
    :func:`summarize_workers`."""
    if len({row.get("worker", "main") for row in rows}) > 1:
        return summarize_workers(rows, top)
    cpu, wall = sum(r["cpu_s"] for r in rows), sum(r["wall_s"] for r in rows)
    cores = rows[0]["cores"]  # the process's CPUs, as each row records them
    lines = [f"{len(rows)} tests: {cpu:,.0f} CPU-s in {wall:,.0f} s of wall ({cpu / max(wall, 1e-9):.2f} cores busy "
             f"on average); floor on {cores} cores: {cpu / cores:,.0f} s"]
    by_file_cpu, by_file_wall = Counter(), Counter()
    for row in rows:
        by_file_cpu[row["id"].split("::")[0]] += row["cpu_s"]
        by_file_wall[row["id"].split("::")[0]] += row["wall_s"]
    lines.append("\nCPU-s   wall-s  file")
    lines += [f"{c:6.1f}  {by_file_wall[f]:6.1f}  {f}" for f, c in by_file_cpu.most_common(top)]
    lines.append("\nCPU-s   wall-s  test")
    lines += [f"{r['cpu_s']:6.1f}  {r['wall_s']:6.1f}  {r['id']}" for r in sorted(rows, key=lambda r: -r["cpu_s"])[:top]]
    return "\n".join(lines)


def summarize_workers(rows: list[dict], top: int = 25) -> str:
    """A run of several workers: each worker's span, the machine's idle core-seconds over the run, and the tests the
    machine idled most beside."""
    first = min(rows, key=lambda r: r["start"])
    last = max(rows, key=lambda r: r["end"])
    span = last["end"] - first["start"]
    cores = first["cores"]
    # The machine's busy CPU from the first test's start to the last one's end: the last row's reading at its end.
    busy = last["busy_at_start"] + last["cpu_s"] - first["busy_at_start"]
    idle = cores * span - busy
    lines = [f"{len(rows)} tests on {len({r['worker'] for r in rows})} workers: {span:,.0f} s from the first start to "
             f"the last end, {busy:,.0f} CPU-s busy ({busy / max(span, 1e-9):.2f} of {cores} cores), "
             f"{idle:,.0f} core-s idle; floor at this CPU: {busy / cores:,.0f} s"]
    lines.append("\nworker  tests  first start  last end  (s after the run's first start)")
    for worker in sorted({r["worker"] for r in rows}):
        mine = [r for r in rows if r["worker"] == worker]
        lines.append(f"{worker:6}  {len(mine):5}  {min(r['start'] for r in mine) - first['start']:11.1f}  "
                     f"{max(r['end'] for r in mine) - first['start']:8.1f}")
    lines.append("\nidle core-s beside it  wall-s  test")
    beside = sorted(rows, key=lambda r: -(cores * r["wall_s"] - r["cpu_s"]))[:top]
    lines += [f"{cores * r['wall_s'] - r['cpu_s']:21.1f}  {r['wall_s']:6.1f}  {r['id']}" for r in beside]
    return "\n".join(lines)


#: What the plugin writes on every row; the summaries read all of them.
ROW_FIELDS = ("id", "cpu_s", "wall_s", "worker", "start", "end", "busy_at_start", "cores")


def read_rows(path: Path) -> list[dict]:
    """The plugin's rows from ``path``; ValueError naming the file (and the line) for one that cannot be read, a
    line that is not a JSON object with every field of ``ROW_FIELDS``, or a file with no rows."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as err:
        raise ValueError(f"{path}: cannot read ({err})") from None
    rows = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as err:
            raise ValueError(f"{path}:{number}: invalid JSON ({err})") from None
        if not isinstance(row, dict):
            raise ValueError(f"{path}:{number}: not a JSON object")
        missing = [field for field in ROW_FIELDS if field not in row]
        if missing:
            raise ValueError(f"{path}:{number}: no {', '.join(repr(f) for f in missing)} (not a row of this plugin)")
        rows.append(row)
    if not rows:
        raise ValueError(f"{path}: no rows (the run wrote none before it ended)")
    return rows


def parse_args(argv: list[str] | None = None):
    from judge.plumbing.config_files import ExactArgumentParser

    parser = ExactArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="Exit status: 0 the summary printed; 1 the file cannot be read or a row is not the plugin's; "
               "2 wrong arguments.")
    parser.add_argument("rows", type=Path, help="the plugin's JSONL ($SUITE_CPU_OUT of the pytest run)")
    parser.add_argument("--top", type=int, default=25, help="files and tests to list (default: 25)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        rows = read_rows(args.rows)
    except ValueError as err:
        print(f"suite_cpu.py: {err}", file=sys.stderr)
        return 1
    print(summarize(rows, args.top))
    return 0


if __name__ == "__main__":
    sys.exit(main())
