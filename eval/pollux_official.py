"""What POLLUX's own released evaluator computes: ``format_acc``, ``score_acc`` and ``mse`` (not the paper's metrics).

The POLLUX repository's judge evaluator (``/work/shared/pollux/RELEASE.md``, "POLLUX's released evaluation code")
reads a score from each judge output as the **first** ``[RESULT] `` followed by digits (a decimal if present, else
a single digit), compares it with the released ``criteria_score`` and reports:

- ``format_acc``: the share of outputs from which a score was extracted;
- ``score_acc``: the share of outputs whose score equals ``criteria_score`` exactly (an output without a score
  counts as wrong);
- ``mse``: the mean squared error against ``criteria_score`` over the outputs with a score.

``extract_score`` reproduces its extraction faithfully, known bugs included (see there), so that a user can put
the repository's figures beside the paper's. The paper's metrics (MAE against the experts' mode, Verdict
Confidence, Spearman; ``eval.item_table``) stay the headline; these numbers are reported in their own section.

Regression (``-r``) judges: POLLUX scores them with the head's raw value (RELEASE.md, "How POLLUX scores with an
``-r`` judge"), not with a number parsed from text. A prediction that carries ``regression_score`` (judge-serve's
raw, unclipped head value) is scored with it; an older prediction of a regression head without it falls back to
its ``score`` (clipped into the scale by judge-serve), and ``n_regression_clipped`` counts those.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

__all__ = ["extract_score", "official_metrics", "pollux_official", "TITLE"]

TITLE = "POLLUX repository evaluator (not the paper's metrics)"

# The first "[RESULT] " (one space, upper case, no markdown) followed by a decimal number if there is one, else a
# single digit. Known bugs of the original, kept on purpose so the figures match the repository's:
#   BUG (faithful): "[RESULT] 10" reads as 1 (a two-digit integer is cut to its first digit);
#   BUG (faithful): "[RESULT] 1,5" reads as 1 (a decimal comma is not a decimal);
#   and the first [RESULT] wins, even one quoted inside the rationale; "-1", "**2**" or "[RESULT]2" give nothing.
_RESULT = re.compile(r"\[RESULT\] (\d+\.\d+|\d)")


def extract_score(text: str | None) -> float | None:
    """The score POLLUX's evaluator reads from a judge output, or None when it reads none."""
    if not text:
        return None
    match = _RESULT.search(text)
    return float(match.group(1)) if match else None


def official_metrics(scores: Iterable[float | None], references: Iterable[float]) -> dict[str, Any]:
    """``format_acc``, ``score_acc`` and ``mse`` of extracted scores against ``criteria_score`` values.

    Args:
        scores: one extracted score per output (None or NaN: nothing extracted).
        references: the matching ``criteria_score`` values.

    Returns:
        ``{"n", "n_parsed", "format_acc", "score_acc", "mse"}``; NaN rates when n is 0, NaN mse when nothing parsed.
    """
    if not isinstance(scores, np.ndarray):  # a list with None for "nothing extracted"
        scores = [np.nan if v is None else v for v in scores]
    scores = np.asarray(scores, dtype=np.float64)
    references = np.asarray(list(references), dtype=np.float64)
    parsed = np.isfinite(scores)
    n, n_parsed = len(scores), int(parsed.sum())
    errors = scores[parsed] - references[parsed]
    return {
        "n": n,
        "n_parsed": n_parsed,
        "format_acc": n_parsed / n if n else float("nan"),
        # An output without a score is wrong: exact matches over all n outputs.
        "score_acc": int((errors == 0).sum()) / n if n else float("nan"),
        "mse": float((errors**2).mean()) if n_parsed else float("nan"),
    }


def _reference(record) -> tuple[float | None, bool]:
    """The record's ``criteria_score``; without one, the mean of its expert scores, which is how the released
    aggregate is made ("an unweighted average of the corresponding point estimates",
    ``seeds/003_04de0265a3137b49.txt:179``). Returns ``(value, derived_from_experts)``."""
    if record.criteria_score is not None and math.isfinite(float(record.criteria_score)):
        return float(record.criteria_score), False
    if record.expert_scores:
        return sum(record.expert_scores) / len(record.expert_scores), True
    return None, False


def _score_of(row: Mapping[str, Any] | None) -> tuple[float | None, str]:
    """The score POLLUX's evaluator takes from one prediction row, and which kind of row it was."""
    if row is None:
        return None, "no_prediction"
    if row.get("error") == "request_failed":
        return None, "request_failed"
    if row.get("regression_score") is not None:
        return float(row["regression_score"]), "regression"
    if str(row.get("score_source") or "").startswith("regression"):
        score = row.get("score")
        return (float(score) if score is not None and row.get("parse_ok") else None), "clipped"
    return extract_score(row.get("raw_output")), "output"


def pollux_official(records, predictions: Iterable[Mapping[str, Any]], splits: Mapping[str, Any]) -> dict[str, Any]:
    """POLLUX's evaluator over a run, per test (Zero-Shot, Standard, both).

    Args:
        records: the labelled ``JudgeRecord`` list.
        predictions: the run's prediction rows (the first row per id counts, as in scoring).
        splits: ``{split name: item indices into records}`` (``eval.item_table``'s splits).

    Returns:
        ``{"title", "extraction", "reference", "splits": {split: metrics + counts}}``, where each split holds
        ``official_metrics``'s keys over the outputs (rows whose request failed have no output and are left out:
        ``n_request_failed``), ``n_no_prediction``, ``n_no_reference`` (no criteria_score and no expert score:
        left out), ``n_reference_from_experts``, ``n_regression`` (scored with the head's raw value) and
        ``n_regression_clipped``.
    """
    by_id: dict[str, Mapping[str, Any]] = {}
    for row in predictions:
        by_id.setdefault(str(row["id"]), row)
    n = len(records)
    scores = np.full(n, np.nan)  # NaN: nothing extracted
    references = np.full(n, np.nan)  # NaN: no reference
    kind = np.empty(n, dtype=object)  # "output", "regression", "clipped", "no_prediction", "request_failed"
    from_experts = np.zeros(n, dtype=bool)
    for i, record in enumerate(records):
        reference, from_experts[i] = _reference(record)
        score, kind[i] = _score_of(by_id.get(record.id))
        if reference is not None:
            references[i] = reference
        if score is not None:
            scores[i] = score

    out: dict[str, Any] = {
        "title": TITLE,
        "extraction": "first '[RESULT] ' followed by a decimal number, else a single digit (POLLUX's regex, bugs "
                      "kept: '10' reads as 1, '1,5' as 1); regression judges: the head's raw value",
        "reference": "criteria_score (the mean of the experts' scores where a record has none)",
        "splits": {},
    }
    no_output = (kind == "no_prediction") | (kind == "request_failed")
    usable = ~no_output & np.isfinite(references)
    for split, index in splits.items():
        index = np.asarray(index, dtype=np.int64)
        used = index[usable[index]]
        block = official_metrics(scores[used], references[used])
        block.update({
            "n_no_prediction": int((kind[index] == "no_prediction").sum()),
            "n_request_failed": int((kind[index] == "request_failed").sum()),
            "n_no_reference": int((~no_output[index] & ~np.isfinite(references[index])).sum()),
            "n_reference_from_experts": int(from_experts[used].sum()),
            "n_regression": int((kind[used] == "regression").sum()),
            "n_regression_clipped": int((kind[used] == "clipped").sum()),
        })
        out["splits"][split] = block
    return out
