"""The seq2seq recipe on CPU with trl's fused LM head scoring every position against the labelled ones only.

    .venv/bin/python bench/train_label_positions.py                # the tiny seq2seq config, 2 rounds per arm
    .venv/bin/python bench/train_label_positions.py --rounds 3 --max-steps 6

``train.recipe_steps.labelled_positions_only_on_cpu`` (which the seq2seq recipe imports by name) makes trl's fused LM head project only the positions whose label
is not -100 on CPU, as trl does on CUDA (trl/trainer/utils.py ``add_fused_lm_head``). Each arm runs the whole
``judge-train`` command in a fresh process (model build, data, training, export, its check), in ``interleaved``
order; the "every position" arm replaces the context manager by one that leaves trl as it is. Printed per arm: the
wall time and the CPU seconds of the child (``measure.run_child``), and per round the ratio of the two CPU figures
and the largest relative difference between the two runs' logged losses (the arms must train alike).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
for path in (REPO / "bench", REPO):
    while str(path) in sys.path:
        sys.path.remove(str(path))
    sys.path.insert(0, str(path))

from measure import fmt, interleaved, machine_line, positive_int, run_child, spread  # noqa: E402

ARMS = ("every position", "labelled only")
#: What the child runs: the recipe's CLI, with the context manager left in place or replaced by a no-op.
CHILD = """
import contextlib, sys
import train.seq2seq
if sys.argv.pop(1) == "every position":
    train.seq2seq.labelled_positions_only_on_cpu = lambda: contextlib.nullcontext(False)
from train.cli import main
sys.exit(main(sys.argv[1:]))
"""


def parse_args(argv=None) -> argparse.Namespace:
    from judge.plumbing.config_files import ExactArgumentParser

    p = ExactArgumentParser(description=(__doc__ or "").split("\n\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--rounds", type=positive_int, default=2, help="runs per arm, interleaved")
    p.add_argument("--config", default="configs/train/tiny/seq2seq.yaml", help="seq2seq config to train")
    p.add_argument("--max-steps", type=int, default=12, help="optimizer steps per run")
    return p.parse_args(argv)


def run_arm(arm: str, config: str, max_steps: int, out: Path) -> dict[str, object]:
    """One whole training run in a fresh process; its wall time, CPU seconds and logged losses."""
    proc, wall, cpu = run_child(
        [sys.executable, "-c", CHILD, arm, "--config", config, "--output_dir", str(out), "--max_steps", str(max_steps),
         "--disable_tqdm"], cwd=REPO,
    )  # fmt: skip
    if proc.returncode != 0:
        raise SystemExit(f"{arm}: exit {proc.returncode}\n{proc.stderr[-4000:]}")
    history = json.loads((out / "run.json").read_text(encoding="utf-8"))["result"]["log_history"]
    losses = [entry["loss"] for entry in history if "loss" in entry and "train_loss" not in entry]
    return {"wall_s": wall, "cpu_s": cpu, "losses": losses}


def main(argv=None) -> int:
    args = parse_args(argv)
    print(machine_line())
    ratios, loss_diffs = [], []
    with tempfile.TemporaryDirectory(prefix="bench-label-positions-") as scratch:
        for r, order in enumerate(interleaved(ARMS, args.rounds)):
            figures = {}
            for arm in order:
                figures[arm] = run_arm(arm, args.config, args.max_steps, Path(scratch) / f"{r}-{arm.replace(' ', '-')}")
                print(f"round {r}: {arm:>14}: {figures[arm]['wall_s']:6.1f} s wall, {figures[arm]['cpu_s']:6.1f} CPU-s")
            every, labelled = figures["every position"], figures["labelled only"]
            ratios.append(every["cpu_s"] / labelled["cpu_s"])
            loss_diffs.append(max(abs(a - b) / abs(a) for a, b in zip(every["losses"], labelled["losses"], strict=True)))
            print(f"round {r}: CPU every / labelled x{ratios[-1]:.2f}; largest relative loss difference "
                  f"{loss_diffs[-1]:.1e} over {len(every['losses'])} steps")  # fmt: skip
    print(f"CPU every position / labelled only: {fmt(spread(ratios), 'x', 2)}")
    print(f"largest relative loss difference: {max(loss_diffs):.1e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
