"""How well a ``criteria: auto`` choice matches labelled instructions: criteria-set precision / recall / Jaccard
(``criteria_set_scores``) and the calibration of a stated probability (``reliability``, with its expected
calibration error). Pure functions over plain values; the tfidf training (``train.criteria_tfidf``) chooses its
threshold and reports its calibration with them, and ``bench/criteria_auto.py`` measures every method with them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np

__all__ = ["criteria_set_scores", "reliability"]


def criteria_set_scores(chosen: Iterable[str], gold: Iterable[str]) -> dict[str, float]:
    """Precision, recall and Jaccard of a chosen criteria set against the gold set (over base ids).

    Variants (``facts__2``) count as their base criterion: a judge given the sibling variant still judges the same
    quality, and the fallback set lists base ids.
    """
    a = {c.split("__")[0] for c in chosen}
    b = {c.split("__")[0] for c in gold}
    inter = len(a & b)
    return {
        "precision": inter / len(a) if a else math.nan,
        "recall": inter / len(b) if b else math.nan,
        "jaccard": inter / len(a | b) if a | b else math.nan,
    }



def reliability(probability: Sequence[float], correct: Sequence[bool], bins: int = 10) -> dict:
    """Calibration of stated probabilities (pure): per equal-width bin, the count, mean stated probability and
    accuracy; and the expected calibration error (ECE: the count-weighted mean |accuracy - stated|)."""
    p = np.asarray(probability, dtype=float)
    ok = np.asarray(correct, dtype=float)
    edges = np.linspace(0.0, 1.0, bins + 1)
    which = np.clip(np.searchsorted(edges, p, side="right") - 1, 0, bins - 1)
    table, ece = [], 0.0
    for b in range(bins):
        mask = which == b
        if not mask.any():
            continue
        stated, acc = float(p[mask].mean()), float(ok[mask].mean())
        table.append({"bin": [float(edges[b]), float(edges[b + 1])], "n": int(mask.sum()), "stated": stated,
                      "accuracy": acc})  # fmt: skip
        ece += mask.sum() / len(p) * abs(acc - stated)
    return {"bins": table, "ece": float(ece) if len(p) else math.nan, "n": int(len(p))}
