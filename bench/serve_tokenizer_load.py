"""judge-serve's tokenizer at start-up: ``AutoTokenizer`` against ``serve.tokenizer.load_tokenizer`` (the class
AutoTokenizer would pick, imported directly).

    .venv/bin/python bench/serve_tokenizer_load.py              # 3 rounds per arm, interleaved
    .venv/bin/python bench/serve_tokenizer_load.py --rounds 5

Each arm is a fresh process that imports judge-serve's modules, loads the tokenizer of a tiny judge's folder (the
real Qwen2.5 vocabulary and template, ``train.tiny_models``) and tokenizes one rendered POLLUX prompt, as
judge-serve does before it turns ready. Printed per arm: the process's CPU seconds (``measure.run_child``), whether
it imported torch, the tokenizer's class, and whether both arms produced the same ids.
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

ARMS = ("AutoTokenizer", "load_tokenizer")
CHILD = """
import json, sys
import judge, serve.app, serve.supervision
arm, folder = sys.argv[1:3]
if arm == "AutoTokenizer":
    from transformers import AutoTokenizer
    tokenizer = AutoTokenizer.from_pretrained(folder)
else:
    from serve.tokenizer import load_tokenizer
    tokenizer = load_tokenizer(folder)
item = {"instruction": "Объясни, почему небо голубое.", "answer": "Из-за рэлеевского рассеяния.",
        "criteria_name": "Креативность", "rubrics": "0: нет\\n1: отчасти\\n2: да", "reference_answer": None}
ids = tokenizer.encode(judge.apply_chat(tokenizer, judge.render_prompt(item)))
print(json.dumps({"class": type(tokenizer).__name__, "torch": "torch" in sys.modules, "ids": ids}))
"""


def parse_args(argv=None) -> argparse.Namespace:
    from judge.plumbing.config_files import ExactArgumentParser

    p = ExactArgumentParser(description=(__doc__ or "").split("\n\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--rounds", type=positive_int, default=3, help="processes per arm, interleaved")
    return p.parse_args(argv)


def tiny_judge_folder(folder: Path) -> Path:
    """What judge-serve reads of a tiny judge: the tokenizer files and config.json (no weights needed)."""
    from train.tiny_models import build_qwen_tokenizer, tiny_qwen2_config

    build_qwen_tokenizer().save_pretrained(folder)
    tiny_qwen2_config("causal").to_json_file(folder / "config.json")
    return folder


def run_arm(arm: str, folder: Path) -> dict:
    proc, _, cpu = run_child([sys.executable, "-c", CHILD, arm, str(folder)], cwd=REPO)
    if proc.returncode != 0:
        raise SystemExit(f"{arm}: exit {proc.returncode}\n{proc.stderr[-4000:]}")
    return {**json.loads(proc.stdout.strip().splitlines()[-1]), "cpu_s": cpu}


def main(argv=None) -> int:
    args = parse_args(argv)
    print(machine_line())
    cpu: dict[str, list[float]] = {arm: [] for arm in ARMS}
    ratios = []
    with tempfile.TemporaryDirectory(prefix="bench-tokenizer-") as scratch:
        folder = tiny_judge_folder(Path(scratch))
        for r, order in enumerate(interleaved(ARMS, args.rounds)):
            result = {arm: run_arm(arm, folder) for arm in order}
            for arm in order:
                cpu[arm].append(result[arm]["cpu_s"])
                print(f"round {r}: {arm:>14}: {result[arm]['cpu_s']:5.2f} CPU-s, {result[arm]['class']}, "
                      f"torch imported: {result[arm]['torch']}")  # fmt: skip
            same = result["AutoTokenizer"]["ids"] == result["load_tokenizer"]["ids"]
            ratios.append(result["AutoTokenizer"]["cpu_s"] / result["load_tokenizer"]["cpu_s"])
            print(f"round {r}: same ids: {same}; CPU AutoTokenizer / load_tokenizer x{ratios[-1]:.2f}")
    for arm in ARMS:
        print(f"{arm}: {fmt(spread(cpu[arm]), '', 2)} CPU-s")
    print(f"CPU AutoTokenizer / load_tokenizer: {fmt(spread(ratios), 'x', 2)}")
    print(machine_line())  # and its load at the end, as at the start
    return 0


if __name__ == "__main__":
    sys.exit(main())
