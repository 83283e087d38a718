"""What the length flag confounds (docs/validity.md, "What the residual's slope confounds"): the judge's residual is
its score minus the experts' mean, so a judge that tracks quality less than the experts gets the negative of their
mean's own slope on length, and where longer answers are better it reads "harsh on long answers" without reading
them. Pinned as the documented behaviour, not hidden by a figure that cannot separate the two."""

from __future__ import annotations

import numpy as np
import pytest


def _panel(seed: int = 0, n: int = 40):
    """``n`` answers, one item each, their lengths e^(4 + i / 10) characters (log length 4 + i / 10); three named
    experts (a, b, c) score each answer's quality, log length - 4 (0 to 3.9), plus their own noise (sd 0.3): the
    experts' mean rises by 1 per unit of log length, each expert's leave-one-out residual is noise alone."""
    rng = np.random.default_rng(seed)
    log_length = 4 + np.arange(n) / 10
    quality = log_length - 4
    experts = quality[:, None] + rng.normal(0, 0.3, (n, 3))
    ids = np.tile(np.array(["a", "b", "c"], dtype=object), (n, 1))
    return np.exp(log_length), log_length, experts, ids


def test_a_constant_judge_gets_the_experts_mean_slope_reversed_and_reads_harsh_on_long_answers():
    """A constant judge's residual, 1 - the experts' mean, has exactly minus the mean's slope on log length (the
    least-squares slope of a constant is 0), far below the experts' leave-one-out slopes (noise around 0): flagged
    "harsh on long answers", no clause added. A judge equal to the experts' mean has a residual of 0 and no flag."""
    from eval.validity.bias import length_bias

    chars, log_length, experts, ids = _panel()
    mean = experts.mean(axis=1)
    answers = np.arange(40)
    constant = length_bias(np.ones(40), experts, ids, chars, None, answers=answers)
    assert constant["judge"]["slope"] == pytest.approx(-np.polyfit(log_length, mean, 1)[0], abs=1e-10)
    assert constant["flag"] == "harsh on long answers"
    assert "judge_partial" not in constant
    assert length_bias(mean, experts, ids, chars, None, answers=answers)["flag"] is None
