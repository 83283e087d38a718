"""Where a command's CPU goes, by kind of process: vLLM API servers and EngineCores, judge-serve, training ranks, ...

    python bench/suite_processes.py -- .venv/bin/python -m pytest -q -n 2 --dist loadgroup
    python bench/suite_processes.py --json runs/bench/suite_processes.json -- make test

``bench/suite_cpu.py`` charges the machine's CPU to the test that was running; this one charges it to the process
that spent it, which is what tells an engine start from a training run or a compiler. It runs the command and reads
``/proc/PID/stat`` of every process every ``--interval`` seconds, keeping each process's last user + system time
(processes are told apart by pid and start time, so a reused pid is a new process). A process re-reads its command
line when its name changes (an ``exec``, or vLLM's ``setproctitle``). Counted: every process that started after the
command did, kernel threads left out; on a machine running other jobs their new processes count too.
Not seen: a process that lives less than one interval (its CPU is in its parent's ``cutime``, which is not added), so
the total is a little under the machine's busy time, printed beside it.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from measure import busy_cpu_seconds, machine_line  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")

#: (kind, pattern in the command line or process name): the first that matches names the process.
#: pytest comes first: a worker's title names the test it runs, and test names name the other kinds.
KINDS: tuple[tuple[str, str], ...] = (
    ("pytest (controller, xdist workers)", r"pytest-xdist|-m pytest\b|bin/pytest\b"),
    ("vLLM EngineCore / Worker", r"^VLLM::"),
    ("vLLM model inspection", r"-m vllm\.model_executor\.models\.registry"),
    ("engine supervisor", r"supervisor\.py --grace-s"),
    ("vLLM API server", r"vllm\.entrypoints|vllm serve"),
    ("judge-serve", r"-m serve\.cli|judge-serve"),
    ("torchrun agent", r"torch\.distributed\.run|torchrun"),
    ("training (judge-train)", r"-m train\.cli|judge-train"),
    ("judge-eval", r"-m eval\.cli|judge-eval"),
    ("compiler", r"cc1plus|cc1 |/gcc|/g\+\+|ninja|/ld "),
    ("Slurm daemons", r"slurmctld|slurmd|slurmstepd|munged"),
    ("chromium", r"chrom"),
    ("bubblewrap sandbox", r"bwrap"),
)


def kind_of(command: str) -> str:
    for kind, pattern in KINDS:
        if re.search(pattern, command):
            return kind
    first = command.split(" ", 1)[0].rsplit("/", 1)[-1]
    return first or "?"


def tree_cpu_by_kind(root_pid: int) -> dict[str, float]:
    """CPU seconds (user + system) of each kind of process (``kind_of``) in the live tree below ``root_pid``."""
    import psutil

    by_kind: dict[str, float] = {}
    root = psutil.Process(root_pid)
    for proc in [root, *root.children(recursive=True)]:
        try:
            times = proc.cpu_times()
            kind = kind_of(" ".join(proc.cmdline()))
        except psutil.Error:
            continue
        by_kind[kind] = by_kind.get(kind, 0.0) + times.user + times.system
    return by_kind


def _read(pid: str) -> tuple[str, int, float, float] | None:
    """(name, parent pid, CPU seconds, start time in ticks) of a process, or None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as handle:
            stat = handle.read()
    except OSError:
        return None
    name, rest = stat[stat.index("(") + 1 : stat.rindex(")")], stat[stat.rindex(")") + 2 :].split()
    return name, int(rest[1]), (int(rest[11]) + int(rest[12])) / TICK, float(rest[19])


def _command_line(pid: str) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return handle.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def sample(command: list[str], interval: float) -> tuple[int, list[dict], float, float]:
    """Run the command; return its exit status, one dict per process seen, the wall seconds and machine CPU-s."""
    with open("/proc/self/stat", encoding="utf-8") as handle:
        now_ticks = float(handle.read().rsplit(")", 1)[1].split()[19])  # our own start: every later process counts
    seen: dict[tuple[str, float], dict] = {}
    busy0, started = busy_cpu_seconds(), time.monotonic()
    proc = subprocess.Popen(command)
    me = str(os.getpid())
    while True:
        done = proc.poll() is not None
        for pid in os.listdir("/proc"):
            if not pid.isdigit() or pid == me:
                continue
            read = _read(pid)
            if read is None or read[3] < now_ticks or read[1] == 2:  # older than us, or a kernel thread
                continue
            name, _, cpu, start = read
            entry = seen.get((pid, start))
            if entry is None:
                seen[(pid, start)] = {"pid": int(pid), "name": name, "command": _command_line(pid) or name, "cpu_s": cpu}
            else:
                entry["cpu_s"] = cpu
                if entry["name"] != name:
                    entry["name"], entry["command"] = name, _command_line(pid) or name
        if done:
            break
        time.sleep(interval)
    return proc.returncode, list(seen.values()), time.monotonic() - started, busy_cpu_seconds() - busy0


def summarise(processes: list[dict]) -> list[dict]:
    """CPU seconds and process count by kind, the costliest first."""
    by_kind: dict[str, list[float]] = defaultdict(list)
    for process in processes:
        by_kind[kind_of(process["command"])].append(process["cpu_s"])
    rows = [{"kind": k, "cpu_s": round(sum(v), 1), "processes": len(v), "cpu_s_each": round(sum(v) / len(v), 1)}
            for k, v in by_kind.items()]  # fmt: skip
    return sorted(rows, key=lambda row: -row["cpu_s"])


def main(argv: list[str] | None = None) -> int:
    from judge.plumbing.config_files import ExactArgumentParser  # long options in full, never abbreviated

    parser = ExactArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--interval", type=float, default=0.2, help="seconds between two reads of /proc")
    parser.add_argument("--top", type=int, default=25, help="kinds to print")
    parser.add_argument("--json", type=Path, help="also write every process seen and the summary here")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command to run")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the command to measure after --")
    print(machine_line(), flush=True)
    status, processes, wall_s, machine_cpu_s = sample(command, args.interval)
    rows = summarise(processes)
    seen_s = sum(row["cpu_s"] for row in rows)
    print(f"\n{' '.join(command)}: exit {status}, {wall_s:.0f} s wall; the machine {machine_cpu_s:.0f} CPU-s busy, "
          f"{seen_s:.0f} CPU-s in {len(processes)} processes seen")  # fmt: skip
    print(f"{'CPU-s':>8} {'procs':>6} {'each':>6}  kind")
    for row in rows[: args.top]:
        print(f"{row['cpu_s']:8.1f} {row['processes']:6d} {row['cpu_s_each']:6.1f}  {row['kind']}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"command": command, "exit": status, "wall_s": wall_s, "machine_cpu_s": machine_cpu_s,
                                         "kinds": rows, "processes": processes}, indent=1))  # fmt: skip
    return status


if __name__ == "__main__":
    sys.exit(main())
