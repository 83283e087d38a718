"""``judge-eval compare`` of two ranking runs: POLLUX's matrix of candidate B minus candidate A, with paired intervals.

    judge-eval compare runs/rank/model-a runs/rank/model-b --out runs/rank/a-vs-b

Both folders are ``judge-eval rank`` outputs (``bench.json``, ``items.jsonl``, ``predictions.jsonl``) of one data
set: an instruction both runs hold must have the same text, reference answer, ``meta`` and criteria in each (two runs
of different data are refused; two copies of one data set at different paths are not). The comparison is computed
over the instructions **both** runs scored (at least one score each): for each bootstrap resample, one draw of those
instructions (with replacement) feeds both matrices, so what an instruction makes easy or hard cancels out of the
difference (the paired bootstrap of ``eval.scoring.bootstrap.paired_bootstrap``, over instructions instead of items). A cell
is called ``B higher`` / ``B lower`` when its ``1 - alpha`` interval excludes 0; its two-sided p-value is twice the
smaller share of resampled differences on either side of 0. Both runs must use one normalisation (their
``bench.json`` says which) and should use one judge: a different judge is refused unless ``allow_other_judge``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

from judge.plumbing.json_reading import unreadable_json

__all__ = ["is_ranking_run", "compare_rankings", "render_ranking_compare_markdown"]


def is_ranking_run(folder: str | Path) -> bool:
    """Whether ``folder`` holds a ``judge-eval rank`` run (its ``bench.json``)."""
    from eval.ranking.rank import RANKING_RESULT

    return (Path(folder) / RANKING_RESULT).is_file()


def _load(folder: Path) -> tuple[dict[str, Any], list]:
    from eval.ranking.rank import RANKING_RESULT, ITEMS, ranked_items

    path = folder / RANKING_RESULT
    text = path.read_text(encoding="utf-8")
    try:
        info = json.loads(text)
    except (ValueError, RecursionError) as err:  # a bare json error named no file; deep nesting was a traceback
        raise ValueError(f"{path}: {unreadable_json(err, whole_file=True)}") from None
    # The matrix is recomputed with the reading the run's own used (a bench.json before the option: the toolkit's).
    return info, ranked_items(folder / ITEMS, folder / "predictions.jsonl", info.get("verdict_reader", "toolkit"))


def _instructions(folder: Path) -> dict[Any, dict[str, Any]]:
    """What a run's judge read of each instruction it selected: text, reference answer, meta and criteria."""
    import judge
    from eval.ranking.rank import ITEMS

    found: dict[Any, dict[str, Any]] = {}
    for record in judge.load_records(folder / ITEMS):
        if record.extra.get("selected") is False:  # another selection's item, kept for its verdict
            continue
        seen = found.setdefault(record.extra["prompt_id"], {
            "instruction": record.instruction, "reference_answer": record.reference_answer,
            "meta": record.extra["meta"], "criteria": set()})
        seen["criteria"].add((record.criteria_name, record.rubrics))
    return found


def _refuse_other_data(info_a: dict[str, Any], info_b: dict[str, Any], folders: list[Path]) -> None:
    """ValueError naming the first instruction whose content differs between the runs (different data)."""
    texts_a, texts_b = _instructions(folders[0]), _instructions(folders[1])
    for prompt_id in texts_a.keys() & texts_b.keys():
        a, b = texts_a[prompt_id], texts_b[prompt_id]
        differ = [field for field in a if a[field] != b[field]]
        if differ:
            raise ValueError(f"the runs were made on different data ({info_a.get('data')!r} vs "
                             f"{info_b.get('data')!r}): prompt_id {prompt_id!r} has another {', '.join(differ)} in "
                             "each; compare runs of one data set")


def _scored(arrays) -> list[Any]:
    """The instructions with at least one score (an instruction whose every verdict failed has none)."""
    has_score = np.asarray(arrays.counts.sum(axis=1)).ravel() > 0
    return [p for p, scored in zip(arrays.prompt_ids, has_score) if scored]


def _f(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None


def compare_rankings(run_a: str | Path, run_b: str | Path, n_boot: int = 1000, seed: int = 0, alpha: float = 0.05,
                  allow_other_judge: bool = False) -> dict[str, Any]:
    """B minus A, cell by cell, over the instructions both runs scored.

    Returns:
        ``{"a", "b", "judge", "rows", "columns", "cells": {row: {column: {a, b, delta, ci, p_value, n_resamples,
        verdict}}},
        "n_instructions", "n_boot", "seed", "alpha", "normalize"}``.

    Raises:
        ValueError: not ranking runs, different data, normalisations or judges, or no instruction both scored.
    """
    from eval.ranking.matrix import MEAN_OVER_CRITERIA, MEAN_OVER_META, instruction_weights, matrix_arrays
    from eval.ranking.matrix import percentile_interval, resampled_matrices

    folders = [Path(run_a), Path(run_b)]
    for folder in folders:
        if not is_ranking_run(folder):
            raise ValueError(f"{folder}: not a judge-eval rank run (no bench.json)")
    (info_a, items_a), (info_b, items_b) = map(_load, folders)
    normalize = info_a["matrix"]["normalize"]
    if info_b["matrix"]["normalize"] != normalize:
        raise ValueError(f"the runs normalise differently ({normalize} vs {info_b['matrix']['normalize']}); rerun one "
                         "with --normalize to match")
    readers = [info.get("verdict_reader", "toolkit") for info in (info_a, info_b)]
    if readers[0] != readers[1]:
        raise ValueError(f"the runs read verdicts differently ({readers[0]} vs {readers[1]}); rerun one with "
                         "--verdict-reader to match")
    if info_a.get("judge") != info_b.get("judge") and not allow_other_judge:
        raise ValueError(f"the runs were judged by different judges ({info_a.get('judge')!r} vs "
                         f"{info_b.get('judge')!r}): their matrices are not comparable")
    _refuse_other_data(info_a, info_b, folders)
    full_a, full_b = matrix_arrays(items_a, normalize), matrix_arrays(items_b, normalize)
    scored_b = set(_scored(full_b))
    shared = [p for p in _scored(full_a) if p in scored_b]
    if not shared:
        raise ValueError("the runs have no instruction that both scored")
    layout = SimpleNamespace(criteria=sorted(set(full_a.criteria) | set(full_b.criteria)),
                             metas=sorted(set(full_a.metas) | set(full_b.metas)))
    arrays = [matrix_arrays(items, normalize, layout=layout, prompt_ids=shared) for items in (items_a, items_b)]
    ones = np.ones((1, len(shared)))
    point_a, point_b = (resampled_matrices(a, ones)[0] for a in arrays)
    delta = point_b - point_a
    shape = delta.shape
    low, high, p_value = (np.full(shape, np.nan) for _ in range(3))
    resamples = np.zeros(shape, dtype=np.int64)  # per cell, the resamples whose delta was defined
    if n_boot > 0 and len(shared) >= 2:
        deltas = np.concatenate([resampled_matrices(arrays[1], w) - resampled_matrices(arrays[0], w)
                                 for w in instruction_weights(len(shared), n_boot, seed, key="bench/compare")])
        per_cell = np.ascontiguousarray(np.moveaxis(deltas, 0, -1))  # (rows, columns, resamples)
        for i in range(shape[0]):
            for j in range(shape[1]):
                d = per_cell[i, j]
                d = d[np.isfinite(d)]
                resamples[i, j] = len(d)
                low[i, j], high[i, j] = percentile_interval(d, 1.0 - alpha)
                if len(d):
                    p_value[i, j] = min(1.0, 2.0 * min((d <= 0).mean(), (d >= 0).mean()))
    rows = [*layout.criteria, MEAN_OVER_CRITERIA]
    columns = [*layout.metas, MEAN_OVER_META]
    cells: dict[str, dict[str, Any]] = {}
    for i, r in enumerate(rows):
        cells[r] = {}
        for j, c in enumerate(columns):
            verdict = "—"  # nothing to call: the cell is empty on a side, or no interval was drawn
            if math.isfinite(delta[i, j]) and math.isfinite(low[i, j]) and math.isfinite(high[i, j]):
                verdict = "B higher" if low[i, j] > 0 else "B lower" if high[i, j] < 0 else "no difference"
            cells[r][c] = {"a": _f(point_a[i, j]), "b": _f(point_b[i, j]), "delta": _f(delta[i, j]),
                           "ci": [_f(low[i, j]), _f(high[i, j])], "p_value": _f(p_value[i, j]),
                           "n_resamples": int(resamples[i, j]), "verdict": verdict}
    return {"a": {"run": str(folders[0]), "model": info_a.get("model", "")},
            "b": {"run": str(folders[1]), "model": info_b.get("model", "")}, "judge": info_a.get("judge", ""),
            "rows": rows, "columns": columns, "cells": cells, "n_instructions": len(shared),
            "n_boot": n_boot if len(shared) >= 2 else 0, "seed": seed, "alpha": alpha, "normalize": normalize}


def render_ranking_compare_markdown(result: dict[str, Any]) -> str:
    """The comparison as a Markdown table: delta [interval] and the call, per cell."""

    def fmt(x: Any) -> str:
        return "—" if x is None else f"{x:+.3f}"

    from eval.reports.report import markdown_table  # escapes a "|" or a line break in a criterion or meta name

    rows = []
    for r in result["rows"]:
        parts = []
        for c in result["columns"]:
            cell = result["cells"][r][c]
            low, high = cell["ci"]
            call = f" **{cell['verdict']}**" if cell["verdict"].startswith("B ") else ""
            parts.append(f"{fmt(cell['delta'])} [{fmt(low)}, {fmt(high)}]{call}")
        rows.append([r, *parts])
    return "\n".join([f"# {result['b']['model']} (B) vs {result['a']['model']} (A): POLLUX matrix, B − A",
                      "", f"{result['n_instructions']} instructions scored by both; judge {result['judge']}; "
                      f"{result['n_boot']} paired resamples over instructions; alpha {result['alpha']}.", "",
                      markdown_table(["criteria_name", *result["columns"]], rows)])
