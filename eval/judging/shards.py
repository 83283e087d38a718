"""Merge the shards of an eval array (``slurm/eval.sbatch``) into one run folder: predictions and run.json.

Each array task judged a contiguous block of the data with ``judge-eval run`` into ``shards/<i>/``, which holds
its ``predictions.jsonl`` and its ``run.json``. ``judge-eval score`` reads the run's settings from the run.json
beside the predictions it scores (``verdict_format``: an integer judge gets no POLLUX-evaluator section, which reads
``[RESULT] n`` tags; ``backend``, ``model``, ``prompt_version`` and ``git_revision`` for the report), so the merged
folder needs one too: the shards' common record.

The shards must have been judged alike. A shard rerun with another judge setting (``JUDGE_EVAL_SHARDS=4 sbatch
--array=2 ...`` with another config) would otherwise be scored as the same judge as the others, with no trace of
the mix: every key of the shards' run.json must agree, but for what each shard has of its own (``PER_SHARD``), and
the first key that differs is named. The judge's address may differ only between URLs (a shard rerun through a new
serve job has another host and port); the served model, its weights fingerprint and every setting still agree.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Sequence

__all__ = ["ShardMismatch", "PER_SHARD", "PER_SHARD_CONFIG", "merge_shards", "merged_record"]

#: Top-level run.json keys each shard has of its own: its launches and its counts (the items; with ``--criteria
#: auto``, its rows by the level their criteria were chosen at and those on a Zero-Shot task), the counts summed.
PER_SHARD = ("launch", "earlier_launches", "n_items", "task_choice_levels", "task_choice_zero_shot")
#: config keys each shard has of its own: its block of the data, its folder, and how that task was started.
PER_SHARD_CONFIG = ("data", "out", "overwrite", "progress")


class ShardMismatch(ValueError):
    """Shards judged with different settings, or a shard with predictions and no run.json."""


def _differing_key(a: Any, b: Any, path: str) -> str | None:
    """The dotted path of the first key whose value differs between ``a`` and ``b``, or None when they agree."""
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b), key=str):
            sub = f"{path}.{key}" if path else str(key)
            if key not in a or key not in b:
                return sub
            found = _differing_key(a[key], b[key], sub)
            if found is not None:
                return found
        return None
    return None if a == b else path


def _lookup(record: dict, path: str) -> Any:
    value: Any = record
    for part in path.split("."):
        if not isinstance(value, dict) or part not in value:
            return "(absent)"
        value = value[part]
    return value


def _is_url(judge: Any) -> bool:
    return isinstance(judge, str) and "://" in judge


def _comparable(record: dict) -> dict:
    """The record less what each shard has of its own (and less the judge's address when it is a URL)."""
    out = {key: value for key, value in record.items() if key not in PER_SHARD}
    config = record.get("config")
    if isinstance(config, dict):
        out["config"] = {key: value for key, value in config.items()
                         if key not in PER_SHARD_CONFIG and not (key == "judge" and _is_url(value))}
    return out


def merged_record(records: Sequence[tuple[Path, dict]], data: Path, out: Path) -> dict:
    """The run.json of the merged folder: the shards' common record, with the whole data and the merged folder in
    its config, the items summed, and each shard's own part under ``shards``.

    Raises:
        ShardMismatch: two shards whose records differ outside ``PER_SHARD`` / ``PER_SHARD_CONFIG``, naming the key.
    """
    (first_dir, first), *rest = records
    for shard_dir, record in rest:
        key = _differing_key(_comparable(first), _comparable(record), "")
        if key is not None:
            raise ShardMismatch(
                f"{shard_dir / 'run.json'}: {key} is {json.dumps(_lookup(record, key), ensure_ascii=False)[:200]}, "
                f"but {json.dumps(_lookup(first, key), ensure_ascii=False)[:200]} in {first_dir / 'run.json'}: the "
                "shards were judged with different settings; rerun the odd shard with the others' settings "
                "(--overwrite), or merge only shards judged alike")
    merged = _comparable(first)
    config = dict(merged.get("config") or {})
    judges = {record.get("config", {}).get("judge") for _, record in records if isinstance(record.get("config"), dict)}
    if len(judges) == 1:  # one address for every shard: it is the run's; differing URLs stay each shard's own
        config["judge"] = judges.pop()
    config["data"] = str(data)
    config["out"] = str(out)
    merged["config"] = config
    for key in ("n_items", "task_choice_zero_shot"):
        counts = [record.get(key) for _, record in records]
        if all(isinstance(n, int) for n in counts):
            merged[key] = sum(counts)
    levels = [record.get("task_choice_levels") for _, record in records]
    if all(isinstance(by_level, dict) for by_level in levels):
        merged["task_choice_levels"] = {level: sum(int(by_level.get(level) or 0) for by_level in levels)
                                        for level in dict.fromkeys(k for by_level in levels for k in by_level)}
    merged["shards"] = [
        {"folder": str(shard_dir), "n_items": record.get("n_items"),
         "judge": (record.get("config") or {}).get("judge"), "launch": record.get("launch"),
         "earlier_launches": record.get("earlier_launches", [])}
        for shard_dir, record in records
    ]
    return merged


def merge_shards(shard_dirs: Sequence[str | Path], data: str | Path, out: str | Path) -> tuple[int, Path | None]:
    """Concatenate the shards' predictions into ``out/predictions.jsonl`` and write their common run.json beside it.

    A shard with no predictions (more tasks than records: ``eval.sbatch`` writes an empty file and runs nothing)
    has no run.json and takes no part in the comparison.

    Returns:
        (rows merged, the run.json written, or None when no shard has one: a stale one in ``out`` is removed).

    Raises:
        ShardMismatch: shards judged with different settings, or a shard with predictions but no run.json.
        FileNotFoundError: a shard without predictions.jsonl.
        ValueError: a shard's run.json that is not a JSON object.
    """
    from judge.plumbing.atomic_write import write_atomically
    from judge.plumbing.provenance import PROVENANCE_FILE, read_provenance

    out = Path(out).resolve()
    data = Path(data).resolve()
    records: list[tuple[Path, dict]] = []
    files: list[Path] = []
    for shard in map(Path, shard_dirs):
        predictions = shard / "predictions.jsonl"
        if not predictions.is_file():
            raise FileNotFoundError(f"{predictions}: no such file; did this shard's array task finish?")
        files.append(predictions)
        record = read_provenance(shard, missing_ok=True)
        if record:
            records.append((shard, record))
        elif predictions.stat().st_size:
            raise ShardMismatch(f"{shard / PROVENANCE_FILE}: no such file beside the shard's predictions; the "
                                "merged run would not say which judge made them (judge-eval run writes it: rerun "
                                "the shard)")
    merged = merged_record(records, data, out) if records else None

    rows = 0

    def concatenate(handle) -> None:
        nonlocal rows
        for predictions in files:
            with predictions.open("rb") as source:
                last = b"\n"
                for line in source:
                    handle.write(line)
                    rows += bool(line.strip())
                    last = line
                if not last.endswith(b"\n"):  # rows are whole lines: the next shard's first must not join this one
                    handle.write(b"\n")

    out.mkdir(parents=True, exist_ok=True)
    write_atomically(out / "predictions.jsonl", concatenate)
    run_json = out / PROVENANCE_FILE
    if merged is None:
        run_json.unlink(missing_ok=True)  # an earlier merge's record would describe predictions no longer here
        return rows, None
    write_atomically(run_json, (json.dumps(merged, ensure_ascii=False, indent=2) + "\n").encode("utf-8"))
    return rows, run_json
