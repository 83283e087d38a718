"""The length bias beside the judge's partial slope (``eval.validity.bias.partial_slope``, docs/validity.md): the
residual's slope of a judge that tracks quality less than the experts is the negative of their mean's own slope on
length, and the partial slope (its score on length, the experts' mean held) says whether its score follows length."""

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


def test_partial_slope_of_a_constant_judge_is_zero_and_of_mean_plus_b_log_length_is_b():
    """By Frisch-Waugh-Lovell the coefficient of log length with an intercept and the experts' mean in the fit:

    - a constant judge (1 everywhere) lies in the span of the intercept: slope exactly 0, interval [0, 0];
    - a judge equal to the experts' mean plus 0.25 log(length) is 0.25 log(length) once the mean is held: 0.25, and
      no residual, so an interval of (near) zero width at it;
    - on Critical criteria (best at the lowest level, the score oriented by -1) a judge equal to the experts' mean
      minus 0.25 log(length) reads, oriented, -mean + 0.25 log(length): 0.25 again, lenient on long answers."""
    from eval.validity.bias import partial_slope

    _, log_length, experts, _ = _panel()
    mean = experts.mean(axis=1)
    ones = np.ones(len(mean))
    constant = partial_slope(log_length, np.ones(len(mean)), np.column_stack([mean, ones]), None)
    assert constant == {"n": 40, "slope": 0.0, "ci": [0.0, 0.0]}
    tracked = partial_slope(log_length, mean + 0.25 * log_length, np.column_stack([mean, ones]), None)
    assert tracked["slope"] == pytest.approx(0.25, abs=1e-10)
    assert tracked["ci"] == pytest.approx([0.25, 0.25], abs=1e-8)
    critical = partial_slope(log_length, -(mean - 0.25 * log_length), np.column_stack([-mean, -ones]), None)
    assert critical["slope"] == pytest.approx(0.25, abs=1e-10)


def test_partial_slope_equals_statsmodels_clustered_ols():
    """The coefficient and its cluster-robust standard error are statsmodels' ``OLS(y, [1, x, z]).fit(cov_type=
    "cluster", use_t=True)``'s; the interval's t quantile is at G - 2 where x is constant within the clusters
    (``cluster_slope``), so the half-width over that quantile is statsmodels' standard error."""
    import statsmodels.api as sm
    from scipy.stats import t as student_t

    from eval.validity.bias import partial_slope

    rng = np.random.default_rng(3)
    answers = np.repeat(np.arange(25), 4)  # 25 answers of 4 criteria, one length per answer
    x = rng.normal(0, 1, 25)[answers]
    z = rng.normal(0, 1, 100)
    y = 0.4 * x - 0.7 * z + rng.normal(0, 1, 100)
    got = partial_slope(x, y, z[:, None], answers)
    fit = sm.OLS(y, np.column_stack([np.ones(100), x, z])).fit(cov_type="cluster", cov_kwds={"groups": answers},
                                                               use_t=True)
    assert got["slope"] == pytest.approx(fit.params[1], rel=1e-10)
    half = (got["ci"][1] - got["ci"][0]) / 2
    assert half / student_t.ppf(0.975, 25 - 2) == pytest.approx(fit.bse[1], rel=1e-10)


def test_a_constant_judge_flagged_harsh_on_long_answers_says_its_score_does_not_follow_length():
    """A constant judge's residual, 1 - the experts' mean, has the mean's slope reversed: exactly minus the slope of
    the mean on log length (about -1 here), far outside the experts' leave-one-out slopes (noise around 0), so the
    residual's comparison flags it "harsh on long answers". Its partial slope is 0 with [0, 0], which covers 0: the
    flag says the score does not follow length. A judge equal to the experts' mean minus 0.5 log(length) is flagged
    too, and its partial slope is -0.5, whose interval excludes 0: the flag stands alone."""
    from eval.validity.bias import PARTIAL_COVERS_ZERO, length_bias

    chars, log_length, experts, ids = _panel()
    mean = experts.mean(axis=1)
    answers = np.arange(40)
    constant = length_bias(np.ones(40), experts, ids, chars, None, answers=answers)
    mean_slope = np.polyfit(log_length, mean, 1)[0]
    assert constant["judge"]["slope"] == pytest.approx(-mean_slope, abs=1e-10)
    assert constant["judge_partial"] == {"n": 40, "slope": 0.0, "ci": [0.0, 0.0]}
    assert constant["flag"] == f"harsh on long answers {PARTIAL_COVERS_ZERO}"

    biased = length_bias(mean - 0.5 * log_length, experts, ids, chars, None, answers=answers)
    assert biased["judge"]["slope"] == pytest.approx(-0.5, abs=1e-10)
    assert biased["judge_partial"]["slope"] == pytest.approx(-0.5, abs=1e-10)
    assert biased["flag"] == "harsh on long answers"


def test_the_report_line_shows_the_partial_slope_and_a_file_without_it_reads_as_before():
    """The length row adds the judge's partial slope at three decimals after the flag; a metrics.json written
    before it (no ``judge_partial``) reads back with None and its row is as it was."""
    from eval.validity.render import _length_text
    from judge.metrics_json.validity import LengthBias

    block = {"judge": {"n": 40, "slope": -1.0, "ci": [-1.2, -0.8]},
             "experts": {"by_expert": {"a": {"n": 40, "slope": 0.0, "ci": [-0.1, 0.1]}}, "range": [-0.1, 0.1]},
             "flag": "harsh on long answers"}
    old = LengthBias.from_json(block)
    assert old.judge_partial is None
    assert _length_text(old) == "judge -1.000 [-1.200, -0.800]; experts -0.100 to 0.100: harsh on long answers"
    new = LengthBias.from_json({**block, "judge_partial": {"n": 40, "slope": 0.0, "ci": [-0.05, 0.05]}})
    assert _length_text(new) == ("judge -1.000 [-1.200, -0.800]; experts -0.100 to 0.100: harsh on long answers; "
                                 "its score on log length with the experts' mean held 0.000 [-0.050, 0.050]")
    assert LengthBias.from_json(new.to_json()) == new
