"""What the supervisor process costs a started command: ``/bin/true`` run bare against run under
``judge/plumbing/supervisor.py`` as ``judge.plumbing.processes.start_process`` runs every command
(``python -I -S supervisor.py --grace-s G --owner-pid P -- command``).

    .venv/bin/python bench/supervisor_start.py --rounds 30   # performance.md

Each round runs both arms, in interleaved order, to their end; printed: each arm's wall milliseconds and the
supervised arm's CPU milliseconds (its own and its children's), then the milliseconds the supervisor adds and the
ratio, one of each per round, each as median (min-max, IQR).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
for path in (REPO / "bench", REPO):
    while str(path) in sys.path:
        sys.path.remove(str(path))
    sys.path.insert(0, str(path))

from measure import fmt, interleaved, machine_line, positive_int, run_child, spread  # noqa: E402

ARMS = ("bare", "supervised")
SUPERVISOR = REPO / "judge" / "plumbing" / "supervisor.py"


def parse_args(argv=None) -> argparse.Namespace:
    from judge.plumbing.config_files import ExactArgumentParser

    p = ExactArgumentParser(description=(__doc__ or "").split("\n\n")[0],
                            formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--rounds", type=positive_int, default=10, help="rounds, each running both arms once")
    return p.parse_args(argv)


def command(arm: str) -> list[str]:
    bare = ["/bin/true"]
    if arm == "bare":
        return bare
    return [sys.executable, "-I", "-S", str(SUPERVISOR), "--grace-s", "1", "--owner-pid", str(os.getpid()), "--",
            *bare]


def main(argv=None) -> int:
    args = parse_args(argv)
    print(machine_line())
    wall: dict[str, list[float]] = {arm: [] for arm in ARMS}
    cpu: list[float] = []
    for order in interleaved(ARMS, args.rounds):
        for arm in order:
            done, wall_s, cpu_s = run_child(command(arm))
            if done.returncode != 0:
                print(f"supervisor_start.py: {arm}: exit {done.returncode}: {done.stderr.strip()[:200]}",
                      file=sys.stderr)
                return 1
            wall[arm].append(wall_s * 1000)
            if arm == "supervised":
                cpu.append(cpu_s * 1000)
    for arm in ARMS:
        print(f"{arm}: wall {fmt(spread(wall[arm]), digits=1)} ms")
    print(f"supervised: CPU {fmt(spread(cpu), digits=1)} ms")
    # one difference and one ratio per round (its two arms ran back to back), then their spread: the supervisor adds
    # a fixed interpreter start, so the added milliseconds are the figure; the ratio shows the scale beside it
    added = [s - b for s, b in zip(wall["supervised"], wall["bare"])]
    ratios = [s / b for s, b in zip(wall["supervised"], wall["bare"])]
    print(f"supervised - bare, wall per round: {fmt(spread(added), digits=1)} ms; "
          f"supervised / bare: {fmt(spread(ratios), 'x', digits=0)}")
    print(machine_line())  # and its load at the end, as at the start
    return 0


if __name__ == "__main__":
    sys.exit(main())
