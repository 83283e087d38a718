"""judge-serve's prompt ids for one POLLUX-shaped item (one answer judged on 16 criteria): ``serve.jobs.build_jobs``
against tokenizing the 16 whole prompts, CPU per judgment, interleaved rounds.

    .venv/bin/python bench/serve_tokenize.py --rounds 5
    .venv/bin/python bench/serve_tokenize.py --rounds 5 --criteria 64   # example override

Three arms, each from the validated request to every judgment's chat-wrapped prompt ids:

- ``build_jobs``: what judge-serve does now (``serve.jobs.build_jobs``): the item's shared part (chat opening,
  instruction, reference answer, answer) tokenized once, then the criteria's own parts and the chat template's closing
  in one batch call, the ids joined; one whole prompt per item rendered to check the split. It also resolves the
  criteria, checks each prompt against the context and orders the jobs, which the other arms do not.
- ``whole_one_batch``: every criterion's whole prompt rendered (``judge.render_prompt``), chat-wrapped
  (``judge.apply_chat``) and tokenized in one batch call (build_jobs before it shared the item's part).
- ``whole_one_call_each``: the same whole prompts, one tokenizer call each.

The three give the same ids (checked before timing; tests/unit/test_serve_judging.py pins build_jobs' ids against a
one-prompt call). Prints each arm's CPU ms per judgment and, per round, ``whole_one_batch / build_jobs`` and
``whole_one_call_each / whole_one_batch`` (above 1: the second arm is the cheaper), then their median and spread,
between the machine and its load average at start and at end. Round r runs the arms rotated by r, reversed in every
odd round: A B C, then B C A reversed (A C B), C A B, A B C reversed (C B A), B C A, C A B reversed (B A C), so over
six rounds each arm takes each place twice. Uses the real Qwen2.5 vocabulary
(``train.tiny_models.build_qwen_tokenizer``), no model.
"""

from __future__ import annotations

import json
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.measure import machine, machine_line, positive_int, spreads  # noqa: E402
from judge import apply_chat, render_prompt  # noqa: E402
from serve.jobs import build_jobs  # noqa: E402
from serve.schema import parse_judge_request  # noqa: E402
from train.tiny_models import build_qwen_tokenizer  # noqa: E402

ANSWER = "Ответ модели на вопрос о том, как устроена фотосинтезирующая клетка растения. " * 40
RUBRIC = "0: плохо\n\n1: средне\n\n2: хорошо"


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main(argv: list[str] | None = None) -> None:
    from judge.plumbing.config_files import ExactArgumentParser  # long options in full, never abbreviated

    parser = ExactArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=positive_int, default=5)
    parser.add_argument("--repeats", type=positive_int, default=20, help="items tokenized per arm and round")
    parser.add_argument("--criteria", type=int, default=16)
    args = parser.parse_args(argv)
    print(machine_line(), flush=True)
    tokenizer = build_qwen_tokenizer()
    item = {"instruction": "Объясни фотосинтез школьнику.", "answer": ANSWER,
            "criteria": [{"name": f"Критерий {k}", "rubrics": RUBRIC} for k in range(args.criteria)]}
    request = parse_judge_request({"items": [item]})
    fields = [{"instruction": item["instruction"], "answer": ANSWER, "reference_answer": "",
               "criteria_name": c["name"], "rubrics": RUBRIC} for c in item["criteria"]]  # fmt: skip

    def by_build_jobs() -> list[list[int]]:
        jobs = build_jobs(request, tokenizer, max_model_len=32_768, max_tokens=512)
        return [job.prompt_ids for job in sorted(jobs, key=lambda job: job.slot)]

    def whole_prompts() -> list[str]:
        return [apply_chat(tokenizer, render_prompt(f)) for f in fields]

    arms = {
        "build_jobs": by_build_jobs,
        "whole_one_batch": lambda: tokenizer(whole_prompts(), add_special_tokens=False)["input_ids"],
        "whole_one_call_each": lambda: [tokenizer(t, add_special_tokens=False)["input_ids"] for t in whole_prompts()],
    }
    expected = arms["whole_one_call_each"]()
    for name, arm in arms.items():
        assert arm() == expected, f"{name}: not the ids of the whole prompts"
    judgments = args.repeats * len(fields)
    names = list(arms)
    rounds = []
    for index in range(args.rounds):
        # The arms rotated by the round, reversed in every odd round (the module's docstring lists the orders).
        order = names[index % len(names):] + names[: index % len(names)]
        order = order if index % 2 == 0 else order[::-1]
        row = {}
        for name in order:
            cpu, wall = _cpu_s(), time.perf_counter()
            for _ in range(args.repeats):
                arms[name]()
            row[f"{name}_cpu_ms"] = (_cpu_s() - cpu) / judgments * 1000
            row[f"{name}_wall_ms"] = (time.perf_counter() - wall) / judgments * 1000
        row["whole_one_batch / build_jobs"] = row["whole_one_batch_cpu_ms"] / row["build_jobs_cpu_ms"]
        row["whole_one_call_each / whole_one_batch"] = row["whole_one_call_each_cpu_ms"] / row["whole_one_batch_cpu_ms"]
        rounds.append(row)
        print(f"round {index} ({' '.join(order)}): " + ", ".join(f"{k} {v:.2f}" for k, v in row.items()), flush=True)
    summary = spreads(rounds, {key: (lambda r, key=key: r[key]) for key in rounds[0]})
    print(json.dumps({"machine": machine(), "prompt_tokens": len(expected[0]), "criteria": len(fields),
                      "summary": summary}, indent=1, ensure_ascii=False))  # fmt: skip
    print(machine_line())  # and its load at the end, as at the start


if __name__ == "__main__":
    main()
