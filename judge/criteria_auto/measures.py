"""How well a ``criteria: auto`` choice matches labelled instructions: criteria-set precision / recall / Jaccard
(``criteria_set_scores``) and the calibration of a stated probability (``reliability``, with its expected
calibration error). Pure functions over plain values; the tfidf training (``train.criteria_tfidf``) chooses its
threshold and reports its calibration with them, and ``bench/criteria_auto.py`` measures every method with them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np

__all__ = ["CRITERIA_MATCHES", "criteria_set_scores", "reliability"]

#: How ``criteria_set_scores`` matches a chosen criterion with a gold one. ``exact``: by criterion id, so a per-leaf
#: variant (``operability__5``, Python's) matches only itself: the criteria a judge is asked, each with its own rubric
#: and scale. ``base``: by base id (``operability``), so a sibling leaf's variant (``operability__3``, C++'s) counts as
#: a match: whether the chosen set names the right qualities, whatever the rubric. A Python instruction routed to the
#: C++ leaf scores Jaccard 1.0 by base id and 0.0 by exact id. ``bench/criteria_auto.py`` reports both
#: (docs/criteria-auto.md, "Accuracy"); the tfidf training chooses its threshold by one (``train.criteria_tfidf``).
CRITERIA_MATCHES = ("exact", "base")


def criteria_set_scores(chosen: Iterable[str], gold: Iterable[str], *, match: str) -> dict[str, float]:
    """Precision, recall and Jaccard of a chosen criteria set against the gold set, matched by ``match`` (one of
    ``CRITERIA_MATCHES``; no default, since the two readings differ widely and a figure must say which it is).
    """
    if match not in CRITERIA_MATCHES:
        raise ValueError(f"criteria_set_scores: match must be one of {CRITERIA_MATCHES}, not {match!r}")
    key = (lambda c: c.split("__")[0]) if match == "base" else (lambda c: c)  # noqa: E731
    a = {key(c) for c in chosen}
    b = {key(c) for c in gold}
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
