"""POLLUX's benchmark matrix (its ``src/metrics.py``), with bootstrap intervals over instructions and failure counts.

    from eval.ranking.matrix import RankedItem, pollux_matrix
    matrix = pollux_matrix(items, normalize="minmax", n_boot=1000, seed=0)
    matrix.write_csv("matrix.csv")        # laid out exactly like POLLUX's metrics.csv

**What POLLUX computes** (public repository ``ai-forever/POLLUX``: ``src/metrics.py`` at commit 83f6eb6b and
``src/utils/score_utils.py`` at commit 9179cb4e, the newest stored of each):

- one score per (instruction, criterion) is read from the judge's output; an output with no score is **dropped**
  (metrics.py ``run``: ``if score is None: continue``), and so is a score outside its rubric's scale
  (``score_is_within_scale``);
- each score is **normalised** to 0–1 by its rubric's scale: ``(score - min) / (max - min)`` (score_utils.py
  ``normalize_score``, commit 9179cb4e; commit 83f6eb6b divided by the maximum instead:
  ``normalize="max"`` here; the two agree on every scale that starts at 0). A rubric without a readable scale keeps
  its raw score;
- a rubric's levels are read as score_utils.py's ``parse_scale_values`` reads a text rubric
  (``pollux_scale_levels`` here): a number at the start of a line, after an optional ``-``/``*``/``•`` bullet and
  space, followed by ``:``, a dash, ``)`` or ``.``/``-`` and a space (``0.5:`` is a level 0.5; a bold ``**0**:`` is no
  level); with no such line, the bounds of an "от A до B" / "from A to B" or "шкала/scale ... A-B" range; else the
  rubric has no scale (its score is kept raw, never out of scale, and it is no gate);
- a criterion is **binary** when its rubric declares exactly the levels {0, 1} (``is_binary_scale``; the oldest
  version, commit 2e8eb789, counted "exactly two levels" whatever they were). A binary criterion is a gate: when
  any binary criterion of an instruction is scored anything but 0 (metrics.py: ``raw_score != 0``; the oldest
  version: ``== 1``), **every** score of that instruction becomes 0, the binary ones included. metrics.py only
  reads integer scores out of the judge's text; a regression head's score is continuous (its raw value clipped
  into the scale), so here the gate reads a head's score snapped to the nearest level of its rubric (0.004 is 0,
  0.97 is 1; halfway, the higher level, as any score above 0 closes POLLUX's gate): ``gate_score``. The
  normalised score keeps the head's own value, the judge's estimate;
- the matrix: rows ``criteria_name`` (sorted), columns the ``meta`` values (sorted), cells the mean of the cell's
  scores (``pivot_table(..., aggfunc="mean", sort=True)``); a column ``mean_over_meta`` = the mean of a row's cells;
  a last row ``mean_over_criteria`` = per ``meta``, the mean over criteria of each criterion's mean **over its
  non-binary scores** (``groupby("criteria_name").mean().mean()``), and in the ``mean_over_meta`` column the grand
  mean: the mean of **all non-binary scores pooled** (not a mean of means). A column with no non-binary score has
  an empty cell there. Rows and columns are those of the scored items only (a pivot of them): a criterion or a
  ``meta`` whose every verdict failed has no row or column.

**Beyond POLLUX**: every cell, the means included, has a percentile bootstrap interval over instructions (an
instruction is resampled with all its criteria, so the binary gate stays inside its instruction; the resample weights
are ``eval.scoring.bootstrap``'s), unless it rests on fewer than 2 instructions (``MIN_INSTRUCTIONS``: one
instruction redrawn is always itself, a zero-width interval; ``why_no_ci`` in the cell); and every cell counts what
POLLUX drops silently: verdicts that did not parse, scores out of scale, requests that failed, items with no
prediction (those of a criterion or ``meta`` with no row or column are counted in the totals only: ``failed``
margins' corner). Instructions the judge was never asked about are items
too (``no_answer``: the candidate's request failed; ``empty_answer``: nothing was left once thinking was stripped),
so every instruction of a run shows in the matrix's counts; ``EMPTY_ANSWER`` and ``NO_ANSWER`` say how they are
scored.

The rubric reader here is POLLUX's (``pollux_scale_levels``), not the toolkit's ``judge.scale_of``: the matrix claims
POLLUX's numbers, and the two differ on rubrics such as a ``0.5:`` level or bold levels. Verdicts are read by the
toolkit's parser unless the ranking is told ``--verdict-reader pollux`` (``judge.verdicts.parse_pollux_result``).

Why one module of ~510 lines: the matrix, the per-instruction arrays it is folded from and every count over them
(items, instructions, moving instructions) share one layout of cells and margins, which the resamples, the two-run
comparison and the leaderboard all read; split, the margins' rules would be written in two places.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

# The item-level rules live in eval.ranking.items; named here too, where the matrix's readers look for them.
from eval.ranking.items import (EMPTY_ANSWER, NO_ANSWER, STATUSES, UNJUDGED_STATUSES, RankedItem, gate_score, is_scored,
                                item_status, pollux_scale_levels, unnormalisable)

__all__ = ["RankedItem", "RankingMatrix", "NORMALIZE", "STATUSES", "UNJUDGED_STATUSES", "EMPTY_ANSWER",
           "NO_ANSWER", "MIN_INSTRUCTIONS", "MEAN_OVER_META", "MEAN_OVER_CRITERIA",
           "pollux_matrix", "matrix_arrays", "MatrixArrays", "resampled_matrices", "pollux_scale_levels",
           "gate_score", "is_scored", "cell_counts", "cell_instructions", "moving_instructions", "unnormalisable",
           "full_matrices", "instruction_weights", "percentile_interval"]

#: POLLUX's names of the added column and row (metrics.py: ``matrix["mean_over_meta"]``,
#: ``matrix.loc["mean_over_criteria"]``) and of the index column of metrics.csv.
MEAN_OVER_META, MEAN_OVER_CRITERIA, INDEX_NAME = "mean_over_meta", "mean_over_criteria", "criteria_name"
#: minmax: score_utils.py at 9179cb4e; max: score_utils.py at 83f6eb6b; none: raw scores, as metrics.py at 2e8eb789
#: averaged them (that version's other rules differed too: a binary criterion was any rubric with two levels, and the
#: gate closed on a score of exactly 1; those are not reproduced).
NORMALIZE = ("minmax", "max", "none")
#: The fewest instructions a cell's bootstrap interval (and ``compare``'s call) may rest on: one instruction redrawn
#: is always itself, a zero-width interval (as ``eval.scoring.bootstrap.resamplable`` says for items).
MIN_INSTRUCTIONS = 2


@dataclass
class MatrixArrays:
    """The scored items folded per (instruction, cell): what every matrix and resample is computed from.

    ``sums[i, j]`` / ``counts[i, j]``: the total and number of instruction i's normalised, gated scores in cell j
    (all of them); ``nb_sums`` / ``nb_counts``: the same over non-binary scores only (the means over criteria and
    the grand mean). Sparse (``scipy.sparse`` CSR), shape (instructions, criteria x meta values).
    """

    prompt_ids: list[Any]
    criteria: list[str]
    metas: list[str]
    sums: Any
    counts: Any
    nb_sums: Any
    nb_counts: Any
    failures: dict[str, np.ndarray] = field(default_factory=dict)  # status -> (n_criteria, n_meta) counts
    #: status -> failed items whose criterion or meta has no row or column (no scored item there)
    failures_elsewhere: dict[str, int] = field(default_factory=dict)
    #: the lowest and highest value a cell can take: (0, 1) for normalised scores, the rubrics' extreme levels (and
    #: any raw score of a rubric without a scale) for ``normalize="none"``
    scale: tuple[float, float] = (0.0, 1.0)

    @property
    def shape(self) -> tuple[int, int]:
        return len(self.criteria), len(self.metas)


def _normalised(score: float, levels: tuple[float, ...], normalize: str, where: str) -> float:
    if not levels or normalize == "none":
        return score  # POLLUX: "Missing scale metadata must not discard an otherwise valid score."
    why = unnormalisable(levels, normalize)
    if why:
        raise ValueError(f"{where}: {why}")
    low, high = min(levels), max(levels)
    return score / high if normalize == "max" else (score - low) / (high - low)


def matrix_arrays(items: Iterable[RankedItem], normalize: str = "minmax", *, empty_answer: str = "zero",
                  no_answer: str = "zero", layout: MatrixArrays | None = None, prompt_ids: list[Any] | None = None,
                  paired: Collection[int] | None = None,
                  binary_criteria: Iterable[Collection[str]] = ()) -> MatrixArrays:
    """Apply POLLUX's per-item rules (drop, normalise, gate) and fold the items per (instruction, cell).

    Args:
        items: the judged items, and those the judge was not asked about (``no_answer``, ``empty_answer``).
        normalize: see ``NORMALIZE``.
        empty_answer: see ``EMPTY_ANSWER``; no_answer: see ``NO_ANSWER``.
        layout: take the criteria and meta values (rows and columns) from this one (a comparison's common grid;
            it must hold every item's cell).
        prompt_ids: the instructions, in this order (a comparison's shared ones; items of others are left out).
        paired: the positions in ``items`` of the scored items to keep (a comparison keeps the items both runs
            scored); the gate is decided first, over every item of the run.
        binary_criteria: (meta, criterion) pairs with a binary rubric in the whole data set (``data_binary_criteria``),
            besides those of ``items``: metrics.py reads them from the whole data, so a ``--limit`` that leaves the
            binary rubric's instructions out does not turn a scale-less rubric's gate off.

    Raises:
        ValueError: an unknown ``normalize``, ``empty_answer`` or ``no_answer``, or a scale that cannot normalise
            (naming the item).
    """
    if normalize not in NORMALIZE:
        raise ValueError(f"normalize: {normalize!r} is not one of {', '.join(NORMALIZE)}")
    for name, value in (("empty_answer", empty_answer), ("no_answer", no_answer)):
        if value not in EMPTY_ANSWER:
            raise ValueError(f"{name}: {value!r} is not one of {', '.join(EMPTY_ANSWER)}")
    items = list(items)
    # A rubric without a readable scale is binary when the same (meta, criterion) has a binary rubric elsewhere
    # (metrics.py: the fallback to ``binary_criteria``).
    binary_pairs = {(it.meta, it.criteria_name) for it in items if it.binary} | {tuple(p) for p in binary_criteria}
    # The gate, over every item of the run: a binary criterion scored anything but 0 zeroes every score of its
    # instruction (an unjudged item scored 0 closes nothing).
    rejected = {it.prompt_id for it in items if item_status(it) == "ok" and gate_score(it) != 0
                and (it.binary if it.binary is not None else (it.meta, it.criteria_name) in binary_pairs)}
    keep_ids = None if prompt_ids is None else set(prompt_ids)
    keep_items = None if paired is None else set(paired)
    scored: list[tuple[RankedItem, float, bool]] = []
    failures: dict[str, dict[tuple[str, str], int]] = {s: {} for s in STATUSES[1:]}
    for position, it in enumerate(items):
        if keep_ids is not None and it.prompt_id not in keep_ids:
            continue
        status = item_status(it)
        if status != "ok":
            key = (it.criteria_name, it.meta)
            failures[status][key] = failures[status].get(key, 0) + 1
        if not is_scored(it, empty_answer, no_answer) or (keep_items is not None and position not in keep_items):
            continue
        binary = it.binary if it.binary is not None else (it.meta, it.criteria_name) in binary_pairs
        where = f"prompt_id {it.prompt_id!r}, criterion {it.criteria_name!r}"
        value = 0.0 if status != "ok" else _normalised(float(it.score), it.levels, normalize, where)
        scored.append((it, value, binary))
    if keep_ids is not None:
        items = [it for it in items if it.prompt_id in keep_ids]
    scale = (0.0, 1.0)
    if normalize == "none" and scored:  # raw scores: the rubrics' own range
        ends = [end for it, value, _ in scored for end in (it.levels and (min(it.levels), max(it.levels))
                                                             or (value, value))]
        scale = (min(0.0, *ends), max(ends))

    # The rows and columns of POLLUX's pivot: those of the scored items (a criterion or meta whose verdicts all
    # failed has none; its failures are counted in the totals only).
    criteria = sorted({it.criteria_name for it, _, _ in scored})
    metas = sorted({it.meta for it, _, _ in scored})
    if layout is not None:
        criteria, metas = list(layout.criteria), list(layout.metas)
    if prompt_ids is None:
        prompt_ids = list(dict.fromkeys(it.prompt_id for it in items))
    row = {p: i for i, p in enumerate(prompt_ids)}
    col = {(c, m): ci * len(metas) + mi for ci, c in enumerate(criteria) for mi, m in enumerate(metas)}
    # Sparse (instruction x cell) totals: an instruction fills a handful of the cells, and a resample's matrix is
    # then one sparse-dense product (nnz x resamples) instead of a dense one (instructions x cells x resamples).
    entries: dict[str, list] = {"i": [], "j": [], "score": [], "binary": []}
    for it, value, binary in scored:
        entries["i"].append(row[it.prompt_id])
        entries["j"].append(col[(it.criteria_name, it.meta)])
        entries["score"].append(0.0 if it.prompt_id in rejected else value)
        entries["binary"].append(binary)
    i, j = np.asarray(entries["i"], dtype=np.int64), np.asarray(entries["j"], dtype=np.int64)
    score, keep = np.asarray(entries["score"], dtype=np.float64), ~np.asarray(entries["binary"], dtype=bool)
    shape = (len(prompt_ids), len(criteria) * len(metas))

    def total(values: np.ndarray, mask: np.ndarray | None = None):
        from scipy import sparse

        if mask is not None:
            values, rows, cols = values[mask], i[mask], j[mask]
        else:
            rows, cols = i, j
        return sparse.csr_matrix((values, (rows, cols)), shape=shape)  # duplicates are summed

    sums, counts = total(score), total(np.ones_like(score))
    nb_sums, nb_counts = total(score, keep), total(np.ones_like(score), keep)
    failure_arrays, elsewhere = {}, {}
    row_of, col_of = {c: k for k, c in enumerate(criteria)}, {m: k for k, m in enumerate(metas)}
    for status, per_cell in failures.items():
        grid = np.zeros((len(criteria), len(metas)), dtype=np.int64)
        elsewhere[status] = 0
        for (c, m), n in per_cell.items():
            if c in row_of and m in col_of:
                grid[row_of[c], col_of[m]] = n
            else:
                elsewhere[status] += n
        failure_arrays[status] = grid
    return MatrixArrays(prompt_ids, criteria, metas, sums, counts, nb_sums, nb_counts, failure_arrays, elsewhere,
                        scale)


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1), np.nan)


def _nanmean(values: np.ndarray, axis: int) -> np.ndarray:
    """Mean over finite entries (pandas' skipna); NaN where there are none."""
    finite = np.isfinite(values)
    total = np.where(finite, values, 0.0).sum(axis=axis)
    n = finite.sum(axis=axis)
    return _ratio(total, n)


def full_matrices(w_sums: np.ndarray, w_counts: np.ndarray, w_nb_sums: np.ndarray, w_nb_counts: np.ndarray,
                  shape: tuple[int, int]) -> np.ndarray:
    """(b, n_criteria + 1, n_meta + 1) matrices from per-resample cell totals (b, n_cells): POLLUX's table."""
    b = w_sums.shape[0]
    n_c, n_m = shape
    cells = _ratio(w_sums, w_counts).reshape(b, n_c, n_m)
    nb_cells = _ratio(w_nb_sums, w_nb_counts).reshape(b, n_c, n_m)
    out = np.full((b, n_c + 1, n_m + 1), np.nan)
    out[:, :n_c, :n_m] = cells
    out[:, :n_c, n_m] = _nanmean(cells, axis=2)  # mean_over_meta: the mean of the row's cells
    out[:, n_c, :n_m] = _nanmean(nb_cells, axis=1)  # mean_over_criteria: mean of the non-binary criteria means
    out[:, n_c, n_m] = _ratio(w_nb_sums.sum(axis=1), w_nb_counts.sum(axis=1))  # grand mean: pooled non-binary
    return out


def resampled_matrices(arrays: MatrixArrays, weights: np.ndarray) -> np.ndarray:
    """POLLUX's matrix for each row of ``weights`` (b, n_instructions): how often each instruction was drawn."""
    def weighted(totals) -> np.ndarray:
        return np.asarray((totals.T @ weights.T).T)  # sparse.T @ dense: nnz x resamples multiply-adds

    return full_matrices(weighted(arrays.sums), weighted(arrays.counts), weighted(arrays.nb_sums),
                         weighted(arrays.nb_counts), arrays.shape)


def instruction_weights(n: int, n_boot: int, seed: int, key: str = "bench/matrix"):
    """Blocks of bootstrap weights over ``n`` instructions (``eval.scoring.bootstrap``'s resampler: n draws with
    replacement per resample), ``n_boot`` rows in all."""
    from eval.scoring import bootstrap

    return bootstrap.resample_weights(np.ones(n, dtype=np.int64), n_boot, bootstrap.cell_rng(seed, key))


def percentile_interval(samples: np.ndarray, level: float = 0.95) -> list[float]:
    """``eval.scoring.bootstrap``'s percentile interval over the finite samples."""
    from eval.scoring import bootstrap

    return bootstrap.percentile_interval(samples, level)


@dataclass
class RankingMatrix:
    """POLLUX's matrix with intervals and counts; rows ``criteria + [mean_over_criteria]``, columns
    ``metas + [mean_over_meta]``.

    Attributes:
        values: (rows, columns) point values; NaN for an empty cell.
        ci_low, ci_high: percentile bootstrap bounds (NaN without resamples, or for a cell resting on fewer than
            ``MIN_INSTRUCTIONS`` instructions).
        n: scored items per cell (the margins: their sums); with ``empty_answer="zero"`` (``no_answer="zero"``),
            an empty answer's (a failed answer's) items are among them (scored 0).
        instructions: the distinct instructions behind each cell's scores (``cell_instructions``).
        failed: status -> counts per cell (the margins: their sums; the corner also counts the failures of a
            criterion or meta that has no row or column), for each status but ``ok`` (``STATUSES``): every item the
            judge did not score, ``empty_answer`` ones whether scored 0 or not.
        n_instructions: instructions resampled (those with at least one score); n_boot, normalize, seed,
            empty_answer, no_answer: as computed.
        scale: the range a cell's value can take (``MatrixArrays.scale``): what a page colours by.
    """

    rows: list[str]
    columns: list[str]
    values: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    n: np.ndarray
    failed: dict[str, np.ndarray]
    n_instructions: int
    n_boot: int
    normalize: str
    seed: int
    empty_answer: str = "zero"
    scale: tuple[float, float] = (0.0, 1.0)
    no_answer: str = "zero"
    instructions: np.ndarray | None = None
    binary_criteria: list[list[str]] = field(default_factory=list)  # the data's, given to pollux_matrix

    @property
    def grand_mean(self) -> float:
        return float(self.values[-1, -1])

    def _instructions(self, i: int, j: int) -> int:
        return int(self.instructions[i, j]) if self.instructions is not None else 0

    def why_no_ci(self, i: int, j: int) -> str | None:
        """Why cell (i, j) has no interval; None when it has one."""
        if math.isfinite(self.ci_low[i, j]):
            return None
        # The instructions first: a matrix of one instruction draws no resample (n_boot is 0 then, whatever
        # --n-boot asked), and "no resamples" would send the reader to a flag that is not the cause.
        k = self._instructions(i, j)
        if k < MIN_INSTRUCTIONS:
            return f"rests on {k} instruction{'s' * (k != 1)}; an interval needs at least {MIN_INSTRUCTIONS}"
        if self.n_boot == 0:
            return "no resamples"
        return "no resample defined it"

    def cell(self, row: str, column: str) -> dict[str, Any]:
        """One cell as a dict: value, ci, n, the instructions behind it, why it has no interval (None when it
        has one) and the failure counts."""
        i, j = self.rows.index(row), self.columns.index(column)
        return {"value": _json_float(self.values[i, j]),
                "ci": [_json_float(self.ci_low[i, j]), _json_float(self.ci_high[i, j])],
                "n": int(self.n[i, j]), "n_instructions": self._instructions(i, j),
                "why_no_ci": self.why_no_ci(i, j), **{f"n_{s}": int(a[i, j]) for s, a in self.failed.items()}}

    def to_csv(self) -> str:
        """metrics.csv's text: header ``criteria_name,<meta...>,mean_over_meta``, one line per row, floats as
        pandas writes them (shortest round-trip repr), empty for a NaN cell."""
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow([INDEX_NAME, *self.columns])
        for i, name in enumerate(self.rows):
            writer.writerow([name, *(_csv_float(v) for v in self.values[i])])
        return buffer.getvalue()

    def write_csv(self, path: str | Path) -> Path:
        from judge.plumbing.atomic_write import write_atomically

        return write_atomically(path, self.to_csv().encode("utf-8"))

    def cells_csv(self) -> str:
        """Every cell in long form with its interval and counts (cells.csv)."""
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        statuses = list(self.failed)
        writer.writerow(["criteria_name", "meta", "value", "ci_low", "ci_high", "n", "n_instructions",
                         *(f"n_{s}" for s in statuses)])
        for i, r in enumerate(self.rows):
            for j, c in enumerate(self.columns):
                writer.writerow([r, c, _csv_float(self.values[i, j]), _csv_float(self.ci_low[i, j]),
                                 _csv_float(self.ci_high[i, j]), int(self.n[i, j]), self._instructions(i, j),
                                 *(int(self.failed[s][i, j]) for s in statuses)])
        return buffer.getvalue()

    def to_json(self) -> dict[str, Any]:
        return {"rows": self.rows, "columns": self.columns, "normalize": self.normalize, "n_boot": self.n_boot,
                "seed": self.seed, "empty_answer": self.empty_answer, "no_answer": self.no_answer,
                "scale": list(self.scale), "binary_criteria": self.binary_criteria,
                "n_instructions": self.n_instructions, "grand_mean": _json_float(self.grand_mean),
                "cells": {r: {c: self.cell(r, c) for c in self.columns} for r in self.rows},
                "why_empty": "an empty cell has no scored item: no instruction of that meta has that criterion, or "
                             "every verdict of the cell failed (see its n_* counts)"}


def _margins(grid: np.ndarray, elsewhere: int = 0) -> np.ndarray:
    out = np.zeros((grid.shape[0] + 1, grid.shape[1] + 1), dtype=np.int64)
    out[:-1, :-1] = grid
    out[:-1, -1] = grid.sum(axis=1)
    out[-1, :-1] = grid.sum(axis=0)
    out[-1, -1] = grid.sum() + elsewhere
    return out


def cell_counts(arrays: MatrixArrays) -> np.ndarray:
    """Scored items per cell with margins: a row's sum in ``mean_over_meta``; in ``mean_over_criteria`` (and the
    corner) the non-binary scores only, the ones those means average."""
    n_c, n_m = arrays.shape
    n = _margins(np.asarray(arrays.counts.sum(axis=0)).reshape(n_c, n_m).astype(np.int64))
    n_non_binary = np.asarray(arrays.nb_counts.sum(axis=0)).reshape(n_c, n_m).astype(np.int64)
    n[-1, :-1], n[-1, -1] = n_non_binary.sum(axis=0), n_non_binary.sum()
    return n


def cell_instructions(arrays: MatrixArrays) -> np.ndarray:
    """The distinct instructions behind each cell's scores, margins as ``cell_counts``: a ``mean_over_meta`` cell
    counts the instructions with a score in its row, a ``mean_over_criteria`` cell those with a non-binary score in
    its column, the corner those with any non-binary score."""
    return _instructions_per_cell(arrays.counts > 0, arrays.nb_counts > 0, arrays.shape)


def moving_instructions(arrays_a: MatrixArrays, arrays_b: MatrixArrays) -> np.ndarray:
    """Per cell, margins as ``cell_instructions``: the instructions whose folded totals differ between two runs'
    arrays over the same instructions and layout (a sum or a count, all scores for a cell, non-binary ones for the
    means over criteria). Swapping any other instruction between the runs leaves the cell as it is, so its
    sign-flip test has at best p = 2/2^k on these k (``permutation.smallest_p``), whatever the instructions behind
    it; k = 0 is a cell the two runs scored alike throughout, p = 1."""
    def differ(totals: str, counts: str):
        return (abs(getattr(arrays_a, totals) - getattr(arrays_b, totals))
                + abs(getattr(arrays_a, counts) - getattr(arrays_b, counts))) > 0

    return _instructions_per_cell(differ("sums", "counts"), differ("nb_sums", "nb_counts"), arrays_a.shape)


def _instructions_per_cell(marked, marked_nb, shape: tuple[int, int]) -> np.ndarray:
    """How many instructions (rows) are marked in each cell's columns: a cell its own column, a ``mean_over_meta``
    margin any column of its criterion, a ``mean_over_criteria`` margin any non-binary column of its meta value, the
    corner any non-binary column."""
    n_c, n_m = shape
    has = marked.astype(np.int64).tocsr()
    has_nb = marked_nb.astype(np.int64).tocsr()
    out = np.zeros((n_c + 1, n_m + 1), dtype=np.int64)
    out[:-1, :-1] = np.asarray(has.sum(axis=0)).reshape(n_c, n_m)
    for c in range(n_c):  # any score in the criterion's cells
        out[c, -1] = int((np.asarray(has[:, c * n_m:(c + 1) * n_m].sum(axis=1)).ravel() > 0).sum())
    for m in range(n_m):  # any non-binary score in the meta's cells
        out[-1, m] = int((np.asarray(has_nb[:, m::n_m].sum(axis=1)).ravel() > 0).sum()) if n_c else 0
    out[-1, -1] = int((np.asarray(has_nb.sum(axis=1)).ravel() > 0).sum())
    return out


def pollux_matrix(items: Iterable[RankedItem], normalize: str = "minmax", n_boot: int = 1000, seed: int = 0,
                  level: float = 0.95, empty_answer: str = "zero", no_answer: str = "zero",
                  binary_criteria: Iterable[Collection[str]] = ()) -> RankingMatrix:
    """POLLUX's criteria x meta matrix of a ranking run, with bootstrap intervals over instructions.

    Args:
        items: every (instruction, criterion) of the run, failures and unjudged answers included.
        normalize: ``minmax`` (POLLUX today), ``max`` or ``none`` (see the module docstring).
        empty_answer: ``zero`` or ``unscored`` (``EMPTY_ANSWER``); no_answer: the same (``NO_ANSWER``).
        n_boot: bootstrap resamples (0: no intervals; none either for a cell of fewer than ``MIN_INSTRUCTIONS``
            instructions).
        seed: the resamples' seed.
        level: the intervals' coverage.
        binary_criteria: the data's binary (meta, criterion) pairs (``matrix_arrays``), kept in ``to_json``.

    Raises:
        ValueError: nothing was scored (POLLUX: "No valid scores parsed"), or as ``matrix_arrays``.
    """
    binary_criteria = sorted(map(list, binary_criteria))
    arrays = matrix_arrays(items, normalize, empty_answer=empty_answer, no_answer=no_answer,
                           binary_criteria=binary_criteria)
    if not arrays.counts.nnz:
        # With nothing scored the matrix has no cell: every failure was counted outside one (failures_elsewhere).
        counts = {s: int(a.sum()) + arrays.failures_elsewhere.get(s, 0) for s, a in arrays.failures.items()}
        raise ValueError(f"no verdict was scored ({counts}); POLLUX's matrix needs at least one score")
    point = resampled_matrices(arrays, np.ones((1, len(arrays.prompt_ids))))[0]
    # Resampled are the instructions with a score: one whose every verdict failed (or was never written) adds
    # nothing to any cell, and drawn with the others it would make one scored instruction look like two.
    scored = np.flatnonzero(np.asarray(arrays.counts.sum(axis=1)).ravel() > 0)
    n_i = len(scored)
    instructions = cell_instructions(arrays)
    low = np.full_like(point, np.nan)
    high = np.full_like(point, np.nan)

    def over_all(weights: np.ndarray) -> np.ndarray:
        full = np.zeros((len(weights), len(arrays.prompt_ids)))
        full[:, scored] = weights
        return full

    if n_boot > 0 and n_i >= 2:
        samples = np.concatenate([resampled_matrices(arrays, over_all(w))
                                  for w in instruction_weights(n_i, n_boot, seed)])
        # (rows, columns, resamples): each cell's resamples contiguous for the percentiles.
        per_cell = np.ascontiguousarray(np.moveaxis(samples, 0, -1))
        for i in range(point.shape[0]):
            for j in range(point.shape[1]):
                # A cell of one instruction: every resample that defines it redraws that one, a zero-width interval.
                if instructions[i, j] >= MIN_INSTRUCTIONS:
                    low[i, j], high[i, j] = percentile_interval(per_cell[i, j], level)
    n = cell_counts(arrays)
    return RankingMatrix(rows=[*arrays.criteria, MEAN_OVER_CRITERIA], columns=[*arrays.metas, MEAN_OVER_META],
                       values=point, ci_low=low, ci_high=high, n=n,
                       failed={s: _margins(a, arrays.failures_elsewhere.get(s, 0)) for s, a in arrays.failures.items()},
                       n_instructions=n_i,
                       n_boot=n_boot if n_i >= 2 else 0, normalize=normalize, seed=seed, empty_answer=empty_answer,
                       scale=arrays.scale, no_answer=no_answer, instructions=instructions,
                       binary_criteria=binary_criteria)


def _json_float(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None


def _csv_float(value: float) -> str:
    return repr(float(value)) if math.isfinite(value) else ""

