"""An eval array's shards as slurm/eval.sbatch lays them out, without a cluster or a judge: the data, OUT/shards/count
and shard i's folder holding its block of the data (records i*ceil(N/K)+1 ...), a prediction per selected record and
its run.json. For ``judge-eval merge`` and ``score`` on such an array (tests/unit/test_merge_missing_shards.py,
tests/unit/test_merge_limit_per_shard.py)."""

from __future__ import annotations

import json
from pathlib import Path


def sample_lines(n: int) -> list[str]:
    """The first ``n`` records of the bundled sample, as its lines."""
    import judge

    return [line for line in judge.sample_data_path().read_text(encoding="utf-8").splitlines() if line.strip()][:n]


def eval_array(root: Path, n_records: int, count: int, write_count: bool = True,
               lines: list[str] | None = None, limit: int | None = None,
               judged: int | None = None) -> tuple[Path, list[Path]]:
    """``root``/data.jsonl (``n_records`` of the sample, or ``lines``) cut into ``count`` shards under
    ``root``/out/shards, with shards/count unless not ``write_count``. Each shard with records has a run.json; with
    ``limit`` each was run with ``--limit limit``, so its run.json records the limit and ``n_items`` = the items it
    selected. A shard holds predictions for the first ``judged`` items it selected (default: all, a finished shard).
    Returns the data and the shard folders."""
    lines = lines if lines is not None else sample_lines(n_records)
    data = root / "data.jsonl"
    data.write_text("\n".join(lines) + "\n", encoding="utf-8")
    shards = root / "out" / "shards"
    shards.mkdir(parents=True)
    if write_count:
        (shards / "count").write_text(f"{count}\n")
    per = -(-n_records // count)
    limited = {} if limit is None else {"limit": limit, "split": "all"}
    dirs = []
    for k in range(count):
        shard = shards / str(k)
        shard.mkdir()
        block = lines[k * per:(k + 1) * per]
        (shard / "data.jsonl").write_text("".join(line + "\n" for line in block), encoding="utf-8")
        selected = block if limit is None else block[:limit]
        rows = [{"id": json.loads(line)["id"], "judge": "pollux-4b", "raw_output": "1", "feedback": "", "score": 1.0,
                 "parse_ok": True, "error": None, "reason": "", "score_source": "verdict", "in_scale": True}
                for line in selected[:judged if judged is not None else len(selected)]]
        (shard / "predictions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        if block:
            (shard / "run.json").write_text(json.dumps({
                "job": "judge-eval run", "git_revision": "abc123", "prompt_version": "pollux-ru-4b-v1",
                "backend": "chat", "model": "pollux-4b", "n_items": len(selected),
                "config": {"judge": "http://n1:8000/v1", "data": str(shard / "data.jsonl"), "out": str(shard),
                           "verdict_format": "integer", "prompt": "ru", "max_tokens": 1024, **limited},
                "launch": {"pid": 100 + k}, "earlier_launches": []}), encoding="utf-8")
        dirs.append(shard)
    return data, dirs
