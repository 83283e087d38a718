"""What a ``/v1/judge`` request's jobs hold in memory while they wait for the engine: each job's own ids beside its
item's one shared prefix (``serve.jobs.Job.prefix_ids``, what judge-serve keeps) against a whole copy of the
prompt's ids per job (what it kept before: the prefix's ids copied into every criterion's list).

    .venv/bin/python bench/jobs_memory.py            # two shapes of request, ~10 s

Jobs wait up to the request's timeout for a place at the engine, so what they hold is held by every request queued:
``max_connections`` of them. Each shape is built once with ``serve.jobs.build_jobs`` on the real Qwen2.5 vocabulary
(``train.tiny_models.build_qwen_tokenizer``, no download); memory is what ``tracemalloc`` counts as still allocated
after the jobs are built (the jobs alone), then again once each job's whole prompt ids are made and the jobs are
released (the layout before: the whole lists alone, their id objects the same ones the jobs held; the job records
themselves are not counted in either figure's difference). Printed per shape: both figures in MiB and their ratio.
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import sys
import tracemalloc
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
for path in (REPO / "bench", REPO):
    while str(path) in sys.path:
        sys.path.remove(str(path))
    sys.path.insert(0, str(path))

from measure import machine_line  # noqa: E402

from judge import load_taxonomy  # noqa: E402
from judge.chat_tokens import prepare_tokenizer  # noqa: E402
from serve.jobs import build_jobs  # noqa: E402
from serve.schema import parse_judge_request  # noqa: E402
from train.tiny_models import build_qwen_tokenizer  # noqa: E402

#: (items, criteria per item, answer words, model context): a wide request of long answers at 32k context, and a
#: batch of ordinary ones at 4k (judge-serve's bounds: 64 items, 512 judgments).
SHAPES = [(16, 32, 6_400, 32_768), (64, 8, 400, 4_096)]


def _request(n_items: int, n_criteria: int, n_words: int, seed: int = 0):
    rng = random.Random(seed)
    words = [f"word{i}" for i in range(5_000)]
    criteria = list(load_taxonomy().criteria)[:n_criteria]
    items = [{"instruction": f"Write an essay {i}", "answer": " ".join(rng.choice(words) for _ in range(n_words)),
              "criteria": criteria} for i in range(n_items)]
    return parse_judge_request(json.loads(json.dumps({"items": items})), max_items=64, max_judgments=512)


def parse_args(argv=None) -> argparse.Namespace:
    """No options: the two shapes are fixed (``SHAPES``), so that a run is comparable with the doc's row."""
    from judge.plumbing.config_files import ExactArgumentParser

    return ExactArgumentParser(description=(__doc__ or "").split("\n\n")[0]).parse_args(argv)


def layouts(build) -> tuple[int, int, float]:
    """Bytes the jobs ``build()`` returns hold (prefix shared), bytes the same ids hold as one whole list per job (the
    layout before), and the mean prompt length. The whole lists are measured once the jobs are gone: read while the
    jobs still live, they would count both layouts at once."""
    gc.collect()
    tracemalloc.start()
    try:
        jobs = build()
        shared = tracemalloc.get_traced_memory()[0]
        copies = [job.prompt_ids for job in jobs]  # the layout before: a whole list per job
        del jobs
        gc.collect()
        whole = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    return shared, whole, sum(map(len, copies)) / len(copies)


def main(argv=None) -> None:
    parse_args(argv)
    tokenizer = build_qwen_tokenizer()
    prepare_tokenizer(tokenizer)
    print(machine_line())
    for n_items, n_criteria, n_words, context in SHAPES:
        request = _request(n_items, n_criteria, n_words)
        shared, whole, mean = layouts(lambda: build_jobs(request, tokenizer, max_model_len=context, max_tokens=1024,
                                                         max_judgments=512))  # fmt: skip
        print(f"{n_items} items x {n_criteria} criteria, {mean:,.0f} prompt ids each, context {context}: "
              f"shared prefix {shared / 2**20:.1f} MiB, a copy per job {whole / 2**20:.1f} MiB "
              f"(x{whole / shared:.1f})")
    print(machine_line())  # and its load at the end, as at the start


if __name__ == "__main__":
    main()
