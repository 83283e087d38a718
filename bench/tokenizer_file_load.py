"""Loading a Qwen2.5 tokenizer folder: ``tokenizer.json`` as ``save_pretrained`` writes it (indented, each merge a
pair) against the compact file (``train.tokenizer_file``: one line, each merge one ``"a b"`` string).

    .venv/bin/python bench/tokenizer_file_load.py              # 3 rounds per arm, interleaved
    .venv/bin/python bench/tokenizer_file_load.py --rounds 5

Each arm is a fresh process that loads the folder's tokenizer as judge-serve does (``serve.tokenizer.load_tokenizer``:
``Qwen2Tokenizer``, what AutoTokenizer picks for a Qwen2.5 folder) twice, and tokenizes one rendered POLLUX prompt. The
first load in a process also pays transformers' one-time set-up (its lazy module table, built by reading every model
file), the same for both files; a second load is what a process that builds the tokenizer again pays (a vLLM engine
builds it three times). The folders hold the real Qwen2.5 vocabulary (``train.tiny_models``) and a Qwen2 config.json,
no weights. Printed per arm: each load's CPU seconds, measured inside the child around the load alone, the file's
size, and whether both arms produced the same ids.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
for path in (REPO / "bench", REPO):
    while str(path) in sys.path:
        sys.path.remove(str(path))
    sys.path.insert(0, str(path))

from measure import fmt, interleaved, machine_line, positive_int, run_child, spread  # noqa: E402

ARMS = ("indented", "compact")
CHILD = """
import json, sys, time
import judge
from serve.tokenizer import load_tokenizer
loads = []
for _ in range(2):
    started = time.process_time()
    tokenizer = load_tokenizer(sys.argv[1])
    loads.append(time.process_time() - started)
item = {"instruction": "Объясни, почему небо голубое.", "answer": "Из-за рэлеевского рассеяния.",
        "criteria_name": "Креативность", "rubrics": "0: нет\\n1: отчасти\\n2: да", "reference_answer": None}
ids = tokenizer.encode(judge.apply_chat(tokenizer, judge.render_prompt(item)))
print(json.dumps({"class": type(tokenizer).__name__, "first_s": loads[0], "second_s": loads[1], "ids": ids}))
"""


def parse_args(argv=None) -> argparse.Namespace:
    from judge.plumbing.config_files import ExactArgumentParser

    p = ExactArgumentParser(description=(__doc__ or "").split("\n\n")[0],
                            formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--rounds", type=positive_int, default=3, help="processes per arm, interleaved")
    return p.parse_args(argv)


def folders(scratch: Path) -> dict[str, Path]:
    """The same tokenizer saved by ``save_pretrained``, then a copy of that folder compacted."""
    from serve_tokenizer_load import tiny_judge_folder  # the same folder that bench loads: save_pretrained's file
    from train.tokenizer_file import compact_tokenizer_json

    indented, compact = tiny_judge_folder(scratch / "indented"), scratch / "compact"
    shutil.copytree(indented, compact)
    if not compact_tokenizer_json(compact):
        raise SystemExit(f"{compact}: tokenizer.json was not compacted")
    return {"indented": indented, "compact": compact}


def run_arm(folder: Path) -> dict:
    proc, _, cpu = run_child([sys.executable, "-c", CHILD, str(folder)], cwd=REPO)
    if proc.returncode != 0:
        raise SystemExit(f"{folder.name}: exit {proc.returncode}\n{proc.stderr[-4000:]}")
    return {**json.loads(proc.stdout.strip().splitlines()[-1]), "process_cpu_s": cpu}


def main(argv=None) -> int:
    args = parse_args(argv)
    print(machine_line())
    loads = {(arm, which): [] for arm in ARMS for which in ("first", "second")}
    ratios: dict[str, list[float]] = {"first": [], "second": []}
    with tempfile.TemporaryDirectory(prefix="bench-tokenizer-file-") as scratch:
        paths = folders(Path(scratch))
        for arm in ARMS:
            print(f"{arm}: tokenizer.json {(paths[arm] / 'tokenizer.json').stat().st_size / 1e6:.1f} MB")
        for r, order in enumerate(interleaved(ARMS, args.rounds)):
            result = {arm: run_arm(paths[arm]) for arm in order}
            for arm in order:
                for which in ("first", "second"):
                    loads[arm, which].append(result[arm][f"{which}_s"])
                print(f"round {r}: {arm:>8}: first load {result[arm]['first_s']:5.2f}, "
                      f"second {result[arm]['second_s']:5.2f} CPU-s "
                      f"(process {result[arm]['process_cpu_s']:5.2f}), {result[arm]['class']}")  # fmt: skip
            for which in ("first", "second"):
                ratios[which].append(result["compact"][f"{which}_s"] / result["indented"][f"{which}_s"])
            same = result["indented"]["ids"] == result["compact"]["ids"]
            print(f"round {r}: same ids: {same}; load CPU compact / indented: first x{ratios['first'][-1]:.2f}, "
                  f"second x{ratios['second'][-1]:.2f}")  # fmt: skip
    for which in ("first", "second"):
        for arm in ARMS:
            print(f"{arm}: {which} load {fmt(spread(loads[arm, which]), '', 2)} CPU-s")
        print(f"{which} load CPU compact / indented: {fmt(spread(ratios[which]), 'x', 2)}")
    print(machine_line())  # and its load at the end, as at the start
    return 0


if __name__ == "__main__":
    sys.exit(main())
