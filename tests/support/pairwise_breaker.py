"""What the failing-streak tests of pairwise judging share (``tests/unit/test_breaker_pairwise_rank.py``, transient
failures; ``tests/unit/test_breaker_malformed_pairwise_rank.py``, malformed answers): ten pairs, the run's flags
(one retry, no wait worth the name, one request at a time, so the streak's order is the data's) and the journal."""

from __future__ import annotations

import json
from pathlib import Path

N_PAIRS = 10


def pairs_file(tmp_path: Path) -> Path:
    """``N_PAIRS`` pairs p0..p9 on the pairwise rubric, written to ``tmp_path/pairs.jsonl``."""
    path = tmp_path / "pairs.jsonl"
    rows = [{"id": f"p{k}", "instruction": f"Вопрос {k}?", "answer_1": f"Ответ {k}а.", "answer_2": f"Ответ {k}б.",
             "rubrics": "-1: лучше первый\n0: равны\n1: лучше второй"} for k in range(N_PAIRS)]
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def pair_run_args(url: str, data: Path, out: Path) -> list[str]:
    return ["run", "--judge", url, "--data", str(data), "--out", str(out), "--max-tokens", "32", "--no-progress",
            "--verdict-format", "tagged", "--backoff-s", "0.001", "--max-retries", "1", "--concurrency", "1"]


def journal_rows(path: Path) -> list[dict]:
    """The rows of a journal file, blank lines skipped."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
