"""judge-serve's tokenizing of one POLLUX-shaped item (one answer judged on 16 criteria): one call per prompt
against one batch call, CPU per judgment, interleaved rounds.

    .venv/bin/python bench/serve_tokenize.py --rounds 5

``serve.jobs.build_jobs`` renders every judgment of a request and tokenizes them to check each against the
context; the ids it sends to the engine are the same either way (tests/unit/test_serve_judging.py pins them against a
one-prompt call). Uses the real Qwen2.5 vocabulary (``train.tiny_models.build_qwen_tokenizer``), no model.
"""

from __future__ import annotations

import json
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.measure import interleaved, machine, spreads  # noqa: E402
from judge import apply_chat, render_prompt  # noqa: E402
from train.tiny_models import build_qwen_tokenizer  # noqa: E402

ANSWER = "Ответ модели на вопрос о том, как устроена фотосинтезирующая клетка растения. " * 40


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main(argv: list[str] | None = None) -> None:
    from judge.plumbing.config_files import ExactArgumentParser  # long options in full, never abbreviated

    parser = ExactArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=20, help="items tokenized per arm and round")
    parser.add_argument("--criteria", type=int, default=16)
    args = parser.parse_args(argv)
    tokenizer = build_qwen_tokenizer()
    texts = [
        apply_chat(tokenizer, render_prompt({
            "instruction": "Объясни фотосинтез школьнику.", "answer": ANSWER, "reference_answer": "",
            "criteria_name": f"Критерий {k}", "rubrics": "0: плохо\n1: средне\n2: хорошо",
        }))
        for k in range(args.criteria)
    ]  # fmt: skip
    arms = {
        "one_call_each": lambda: [tokenizer(text, add_special_tokens=False)["input_ids"] for text in texts],
        "one_batch": lambda: tokenizer(texts, add_special_tokens=False)["input_ids"],
    }
    assert arms["one_call_each"]() == arms["one_batch"](), "the two ways must give the same ids"
    judgments = args.repeats * len(texts)
    rounds = []
    for index, order in enumerate(interleaved(tuple(arms), args.rounds)):
        row = {}
        for name in order:
            cpu, wall = _cpu_s(), time.perf_counter()
            for _ in range(args.repeats):
                arms[name]()
            row[f"{name}_cpu_ms"] = (_cpu_s() - cpu) / judgments * 1000
            row[f"{name}_wall_ms"] = (time.perf_counter() - wall) / judgments * 1000
        row["cpu_ratio"] = row["one_call_each_cpu_ms"] / row["one_batch_cpu_ms"]
        rounds.append(row)
        print(f"round {index}: " + ", ".join(f"{k} {v:.2f}" for k, v in row.items()), flush=True)
    tokens = len(tokenizer(texts[0], add_special_tokens=False)["input_ids"])
    summary = spreads(rounds, {key: (lambda r, key=key: r[key]) for key in rounds[0]})
    print(json.dumps({"machine": machine(), "prompt_tokens": tokens, "criteria": len(texts), "summary": summary},
                     indent=1, ensure_ascii=False))  # fmt: skip


if __name__ == "__main__":
    main()
