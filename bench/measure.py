"""What every bench prints around its figures: the machine, its load, and ratios with their spread over rounds.

A shared 2-core machine swings single runs by tens of percent, so the benches measure A and B interleaved, round
by round (A B, B A, A B, ...), take one ratio per round, and report the median ratio with its min-max and
inter-quartile range. A ratio's spread is the honest error bar: two runs agree when their medians fall inside
each other's ranges.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import statistics
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any


def machine() -> dict[str, object]:
    """CPU count and model, Python, and the 1-minute load average now."""
    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {"nproc": len(os.sched_getaffinity(0)), "cpu": model, "python": platform.python_version(),
            "load_1m": round(os.getloadavg()[0], 2)}  # fmt: skip


def busy_cpu_seconds() -> float:
    """CPU seconds the whole machine has spent running code since boot (``/proc/stat``: user, nice, system, irq and
    softirq; not idle, iowait, or the time the hypervisor stole): every process counts, those a measured command
    starts included."""
    with open("/proc/stat", encoding="ascii") as stat:
        user, nice, system, _idle, _iowait, irq, softirq = (int(v) for v in stat.readline().split()[1:8])
    return (user + nice + system + irq + softirq) / os.sysconf("SC_CLK_TCK")


def machine_line(info: dict[str, object] | None = None) -> str:
    info = info or machine()
    return f"machine: {info['nproc']} cores ({info['cpu']}), Python {info['python']}, load average {info['load_1m']}"


def spread(values: Sequence[float]) -> dict[str, float]:
    """Median, min, max and the inter-quartile range (``statistics.quantiles``, inclusive) of per-round values."""
    ordered = sorted(values)
    if len(ordered) >= 2:
        q1, _, q3 = statistics.quantiles(ordered, n=4, method="inclusive")
    else:
        q1 = q3 = ordered[0]
    return {"median": statistics.median(ordered), "min": ordered[0], "max": ordered[-1], "q1": q1, "q3": q3,
            "rounds": len(ordered)}  # fmt: skip


def spreads(rounds: Sequence[Any], columns: Mapping[str, Callable[[Any], float]]) -> dict[str, dict[str, float]]:
    """A bench's summary: for each named column, the ``spread`` over rounds of the value it reads from a round."""
    return {name: spread([value(r) for r in rounds]) for name, value in columns.items()}


def fmt(s: dict[str, float], unit: str = "", digits: int = 3) -> str:
    """``x1.020 (min-max 0.990-1.050, IQR 1.000-1.030, 5 rounds)``."""
    f = f"{{:.{digits}f}}"
    return (f"{unit}{f.format(s['median'])} (min-max {f.format(s['min'])}-{f.format(s['max'])}, "
            f"IQR {f.format(s['q1'])}-{f.format(s['q3'])}, {s['rounds']} rounds)")  # fmt: skip


def interleaved(names: tuple[str, str], rounds: int) -> list[tuple[str, str]]:
    """Round order A B, B A, A B, ...: neither side always runs first (warm caches, load drifting in time)."""
    a, b = names
    return [(a, b) if r % 2 == 0 else (b, a) for r in range(rounds)]


async def interleaved_rounds(arm, names: tuple[str, str], n_rounds: int, compare) -> list[dict[str, Any]]:
    """Both arms of a comparison, round after round in ``interleaved`` order (A B, B A, ...).

    Args:
        arm: ``async arm(name) -> figures`` runs one arm once.
        compare: ``compare(r, order, {name: figures})`` prints round ``r`` and returns its ratios.

    Returns:
        One dict per round: each arm's figures under its name, beside the ratios ``compare`` returned.
    """
    rounds = []
    for r, order in enumerate(interleaved(names, n_rounds)):
        result = {name: await arm(name) for name in order}
        rounds.append({**result, **compare(r, order, result)})
    return rounds


def children_cpu_s() -> float:
    """CPU seconds (user + system) of this process's reaped children and their reaped descendants so far: the
    difference of two readings around a child's run is that child's whole CPU, its last moments and whatever it
    waited for included, which sampling the running process would miss."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_child(cmd: Sequence[str], **popen) -> tuple[subprocess.CompletedProcess, float, float]:
    """Run ``cmd`` to its end (output captured as text); returns it with its wall seconds and the CPU seconds of
    the child and its descendants (`children_cpu_s`, once reaped)."""
    before = children_cpu_s()
    started = time.perf_counter()
    proc = subprocess.run(list(cmd), capture_output=True, text=True, check=False, **popen)
    wall = time.perf_counter() - started
    return proc, wall, children_cpu_s() - before


def not_a_checkout(folder: str, packages: Sequence[str]) -> str | None:
    """Why ``folder`` cannot be a ``--baseline`` (a clone, worktree or archive of this project whose ``packages`` a
    bench runs), or None when it can: checked before any bench work, so that a mistyped path is refused at once, not
    after minutes of building data as a traceback from the first child started in it."""
    path = Path(folder)
    if not path.is_dir():
        return f"--baseline {folder}: no such folder"
    missing = [name for name in packages if not (path / name).is_dir()]
    if missing:
        return f"--baseline {folder}: not a checkout of this project (no {', '.join(f'{m}/' for m in missing)})"
    return None


def positive_int(text: str) -> int:
    """The argparse type of a count of rounds or repeats: an integer of at least 1 (zero rounds measure nothing, and
    their summary has no median: refused while parsing, not as a traceback after the bench's set-up)."""
    value = int(text)  # a ValueError: argparse's own "invalid positive_int value"
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text}: give at least 1")
    return value
