"""The contract part of ``make demo``: tiny judge, sample data, prompts, verdicts — and a printed summary.

Run:
    python -m judge.demo --out runs/demo
    python -m judge.demo --out runs/demo --data my_pollux_rows.jsonl   # any POLLUX-format data

It builds the tiny real judge models (a randomly initialised 2-layer Qwen2 on the real Qwen2.5 vocabulary, causal
and regression-head variants), loads the bundled sample data, renders the judge prompt through the model's chat
template, parses verdicts (the experts' rationales as training targets, plus the malformed outputs judges really
write) and prints what it found. Later stages of ``make demo`` train, serve and evaluate on the same folder.
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections import Counter
from pathlib import Path

from judge import (
    ZERO_SHOT,
    load_records,
    parse_verdict,
    render_prompt,
    render_target,
    sample_data_path,
    scale_of,
    split_of,
)
from judge.prompts import apply_chat

# What real judges emit besides clean verdicts; each must come back as a counted failure, never a score.
MALFORMED_OUTPUTS = [
    "[FEEDBACK] Ответ в целом верный, но неполный. [RESULT] 1",  # cut at the token limit
    "[FEEDBACK] Ответ хороший. [RESULT] отлично [END]",  # a word, not a score
    "[FEEDBACK] Ответ безупречен. [RESULT] 5 [END]",  # outside a 0..2 scale
    "Я думаю, ответ хороший.",  # no tags at all
    "<think>Надо сравнить с эталоном...",  # reasoning never closed
]


def _parse_args(argv):
    parser = argparse.ArgumentParser(prog="python -m judge.demo", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="runs/demo", help="folder for the tiny models and the summary (default: runs/demo)")
    parser.add_argument("--data", default=None, help="POLLUX-format records (default: the bundled sample data)")
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = _parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    # ------------------------------------------------------------------ tiny judge models
    from judge.tiny_models import build_qwen_tokenizer, build_tiny_qwen2

    tokenizer = build_qwen_tokenizer()
    models = {kind: build_tiny_qwen2(out / "models" / f"tiny-{kind}", kind=kind, tokenizer=tokenizer) for kind in ("causal", "regression")}
    for kind, path in models.items():
        print(f"[model] tiny {kind} judge saved to {path}")

    # ------------------------------------------------------------------ data
    source = args.data or sample_data_path()
    records = load_records(source)
    splits = Counter(split_of(r) for r in records)
    no_mode = sum(1 for r in records if _has_no_unique_mode(r.expert_scores))
    print(f"[data] {len(records)} records from {source}")
    print(f"[data] splits: {splits[ZERO_SHOT]} Zero-Shot, {len(records) - splits[ZERO_SHOT]} Standard; "
          f"{len({r.instruction for r in records})} instructions, {len({r.model_id for r in records})} evaluated models, "
          f"{len({r.task_type for r in records})} task types, {len({r.criteria_name for r in records})} criteria")
    print(f"[data] experts per item: {statistics.mean(len(r.expert_scores) for r in records):.2f} on average; "
          f"{no_mode} items without a unique mode (excluded from MAE, counted)")

    # ------------------------------------------------------------------ prompts
    first = records[0]
    chat_text = apply_chat(tokenizer, render_prompt(first))
    lengths = [len(tokenizer(apply_chat(tokenizer, render_prompt(r)), add_special_tokens=False).input_ids) for r in records]
    print(f"[prompt] item {first.id} ({first.task_type}, «{first.criteria_name}») through the chat template:")
    print("\n".join("    " + line for line in chat_text.splitlines()[:14]) + "\n    ...")
    print(f"[prompt] tokens per prompt: median {statistics.median(lengths):.0f}, max {max(lengths)}")

    # ------------------------------------------------------------------ verdicts
    targets = [
        render_target(feedback, score)
        for r in records if r.expert_feedback
        for feedback, score in zip(r.expert_feedback, r.expert_scores)
    ]
    parsed = [parse_verdict(t) for t in targets]
    failures = [parse_verdict(t, scale=scale_of("0: a\n1: b\n2: c")) for t in MALFORMED_OUTPUTS]
    print(f"[verdict] {sum(v.ok for v in parsed)}/{len(parsed)} expert rationales rendered as targets parse back")
    print(f"[verdict] e.g. {targets[0]}")
    for text, verdict in zip(MALFORMED_OUTPUTS, failures):
        print(f"[verdict] {verdict.error:<15} {verdict.reason}  <- {text[:50]!r}")

    summary = {
        "records": len(records),
        "zero_shot": splits[ZERO_SHOT],
        "standard": len(records) - splits[ZERO_SHOT],
        "no_unique_mode": no_mode,
        "targets_parsed": sum(v.ok for v in parsed),
        "targets": len(parsed),
        "malformed_failed": sum(not v.ok for v in failures),
        "models": {kind: str(path) for kind, path in models.items()},
    }
    (out / "contract_summary.json").write_text(json.dumps(summary, ensure_ascii=False, indent=2), encoding="utf-8")
    print(f"[done] summary in {out / 'contract_summary.json'}")
    return 0 if summary["targets_parsed"] == summary["targets"] and summary["malformed_failed"] == len(failures) else 1


def _has_no_unique_mode(scores) -> bool:
    counts = Counter(scores).most_common()
    return len(counts) > 1 and counts[0][1] == counts[1][1]


if __name__ == "__main__":
    raise SystemExit(main())
