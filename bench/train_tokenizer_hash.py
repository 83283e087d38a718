"""What datasets' fingerprint of a ``map`` costs with the training tokenizer as it loads, and without the Python
copies of its vocabulary and merges (``train.recipe_steps.drop_build_copies``).

    .venv/bin/python bench/train_tokenizer_hash.py              # 3 rounds per arm, interleaved
    .venv/bin/python bench/train_tokenizer_hash.py --rounds 5

trl's SFTTrainer tokenizes the prompt-completion rows through ``datasets.Dataset.map`` with the tokenizer in
``fn_kwargs``, and datasets hashes the map's arguments (dill, in Python) to fingerprint the result: every training
process pays it once per map. Each round loads the tokenizer of a tiny judge's folder (the real Qwen2.5 vocabulary,
``train.tiny_models``) as the recipes do, keeps it whole or drops the copies, then times (process CPU seconds) a
``map`` over 12 rows whose function tokenizes with it, as trl's does. Printed: each arm's CPU seconds for the map,
their ratio, the tokenizer's class, and whether both arms tokenized the rows alike and saved the same files.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
for path in (REPO / "bench", REPO):
    while str(path) in sys.path:
        sys.path.remove(str(path))
    sys.path.insert(0, str(path))

from measure import fmt, interleaved, machine_line, positive_int, spread  # noqa: E402

ARMS = ("as loaded", "copies dropped")


def parse_args(argv=None) -> argparse.Namespace:
    from judge.plumbing.config_files import ExactArgumentParser

    p = ExactArgumentParser(description=(__doc__ or "").split("\n\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--rounds", type=positive_int, default=3, help="rounds per arm, interleaved")
    return p.parse_args(argv)


def _tokenize(row, processing_class):
    return {"input_ids": processing_class(row["text"])["input_ids"]}


def one_round(folder: Path, arm: str, saved: Path) -> tuple[float, str, list, bytes]:
    """One arm once: the map's CPU seconds, the tokenizer's class, the tokenized rows, the saved files' bytes."""
    import datasets
    from transformers import AutoTokenizer

    from train.recipe_steps import drop_build_copies

    tokenizer = AutoTokenizer.from_pretrained(folder)
    if arm == "copies dropped":
        drop_build_copies(tokenizer)
    rows = datasets.Dataset.from_list([{"text": f"Оценка ответа номер {i}: [RESULT] {i % 3} [END]"} for i in range(12)])
    started = time.process_time()
    mapped = rows.map(_tokenize, fn_kwargs={"processing_class": tokenizer})
    cpu = time.process_time() - started
    tokenizer.save_pretrained(saved)
    files = b"".join((saved / name).read_bytes() for name in ("tokenizer.json", "tokenizer_config.json"))
    return cpu, type(tokenizer).__name__, mapped["input_ids"], files


def main(argv=None) -> int:
    args = parse_args(argv)
    import datasets

    from train.tiny_models import build_qwen_tokenizer, tiny_qwen2_config

    datasets.disable_progress_bars()
    print(machine_line())
    with tempfile.TemporaryDirectory(prefix="bench-tokenizer-hash-") as tmp:
        folder = Path(tmp) / "tokenizer"
        build_qwen_tokenizer().save_pretrained(folder)
        # A model folder's config.json: with model_type qwen2, AutoTokenizer picks Qwen2Tokenizer, as for T-lite.
        tiny_qwen2_config("causal").to_json_file(folder / "config.json")
        cpu: dict[str, list[float]] = {arm: [] for arm in ARMS}
        last: dict[str, tuple[str, list, bytes]] = {}  # each arm's last round: class, rows, files
        for i, (first, second) in enumerate(interleaved(ARMS, args.rounds)):
            for arm in (first, second):
                seconds, *rest = one_round(folder, arm, Path(tmp) / f"saved-{i}-{ARMS.index(arm)}")
                cpu[arm].append(seconds)
                last[arm] = tuple(rest)
    for arm in ARMS:
        print(f"{arm:>15}: the map's fingerprint and tokenization {fmt(spread(cpu[arm]))} CPU-s")
    ratios = [b / a for a, b in zip(cpu[ARMS[0]], cpu[ARMS[1]])]
    print(f"copies dropped / as loaded: {fmt(spread(ratios))}")
    (class_a, rows_a, files_a), (class_b, rows_b, files_b) = (last[arm] for arm in ARMS)
    same_ids, same_files = (class_a, rows_a) == (class_b, rows_b), files_a == files_b
    print(f"tokenizer class: {class_a}; same tokenized rows: {same_ids}; "
          f"same save_pretrained files: {same_files}")
    return 0 if same_ids and same_files else 1


if __name__ == "__main__":
    raise SystemExit(main())
