"""Leniency leaves the judge's off-scale answers out, as kappa, alpha and the marginal homogeneity table do, and
names them in its row and the sentence (``eval.validity.bias.leniencies``, docs/validity.md)."""

from __future__ import annotations

import numpy as np
import pytest


def _block(judge: np.ndarray, experts: np.ndarray):
    from tests.support.validity_tables import split_section, table_on_0_to_2

    return split_section(table_on_0_to_2(judge, experts, None))


def test_an_off_scale_answer_is_out_of_leniency_and_counted():
    """40 items on 0-2, experts (e, e) with e = 0, 1, 0, 1, ...; the judge gives e on 36 items and 7 on the last
    four. Kept, the four 7s (errors 7, 6, 7, 6) made the mean 26 / 40 = +0.65 out of a judge otherwise exact. Left
    out: 36 errors of 0, mean 0 with the zero-width interval [0, 0], "neither"; 4 off the scale counted, 0 failed.
    The row names them as the kappa row does."""
    from eval.validity.render import _overall_rows

    truth = np.arange(40) % 2.0
    experts = np.column_stack([truth, truth])
    judge = truth.copy()
    judge[36:] = 7.0
    block = _block(judge, experts)
    lenient = block.overall.leniency
    assert (lenient.n, lenient.mean_signed_error, lenient.ci, lenient.direction) == (36, 0.0, [0.0, 0.0], "neither")
    assert (lenient.n_judge_failed, lenient.n_judge_off_scale) == (0, 4)
    row = dict(_overall_rows(block))["leniency (+ = lenient)"]
    assert row == "0.000 [0.000, 0.000]: neither (over 36 items; 4 off the scale left out)"
    # the length slope leaves them out too, its 36 residuals all 0; kept, the 7s on the longest answers made it rise
    import dataclasses

    from tests.support.validity_tables import split_section, table_on_0_to_2

    table = table_on_0_to_2(judge, experts, None)
    table = dataclasses.replace(table, answer_chars=np.arange(1, 41) * 50)
    length = split_section(table).overall.length_bias
    assert (length.judge.n, length.judge.slope, length.judge.ci) == (36, 0.0, [0.0, 0.0])
    # ... and counts them, as leniency does; its row names them as the leniency row does
    assert (length.n_judge_failed, length.n_judge_off_scale) == (0, 4)
    from eval.validity.render import _length_text

    assert _length_text(length).startswith("judge 0.000 [0.000, 0.000] (over 36 items; 4 off the scale left out); ")


def test_length_bias_counts_failures_and_off_scale_answers_on_the_items_its_slope_is_drawn_from():
    """Six items, answers 100..600 characters: judge (1, NaN, 9, 2, NaN, 2), experts ((0, 0), (1, 1), (1, 1),
    (2, NaN), (NaN, NaN), (0, 2)), the 9 off the scale. The slope's items have two experts or more: 0, 1, 2, 5.
    Failed among them: item 1 (item 4's judge failed too, but it has no expert); off the scale: item 2 (item 3 has
    one expert). That leaves items 0 and 5, too few for a slope (three answers). Without ``off_scale`` nothing is
    counted and the 9 enters the slope, over items 0, 2 and 5."""
    from eval.validity.bias import length_bias

    judge = np.array([1.0, np.nan, 9.0, 2.0, np.nan, 2.0])
    experts = np.array([[0, 0], [1, 1], [1, 1], [2, np.nan], [np.nan, np.nan], [0, 2]], dtype=float)
    chars = np.arange(1, 7) * 100
    off = np.array([False, False, True, False, False, False])
    got = length_bias(judge, experts, None, chars, None, off_scale=off)
    assert (got["judge"], got["n_judge_failed"], got["n_judge_off_scale"]) == (None, 1, 1)
    before = length_bias(judge, experts, None, chars, None)
    assert before["judge"]["n"] == 3
    assert "n_judge_off_scale" not in before and "n_judge_failed" not in before


def test_the_length_row_without_a_slope_still_names_what_it_left_out():
    """A slope needs three answers: with the judge off the scale on all but two of the items, there is none, and
    the row says which answers were left out of it."""
    from eval.validity.render import _length_text
    from judge.metrics_json.validity import LengthBias, NamedExpertSlopes

    length = LengthBias(None, NamedExpertSlopes({}, None), None, n_judge_failed=1, n_judge_off_scale=5)
    assert _length_text(length).endswith("(1 failed item and 5 off the scale left out)")


def test_the_sentence_names_the_off_scale_answers_left_out_of_a_direction():
    """The same 40 items, the judge one level above the experts (e + 1, on the scale) on the first 36: errors of +1,
    the zero-width [1, 1] over 36 answers (at least 10), lenient +1.00; the four 7s are left out and named once, with
    the figures they are out of."""
    truth = np.arange(40) % 2.0
    judge = truth + 1
    judge[36:] = 7.0
    block = _block(judge, np.column_stack([truth, truth]))
    assert block.overall.leniency.direction == "lenient"
    assert "lenient overall (+1.00); 4 judge answers off the scale left out of κ, α and leniency" in block.sentence


def test_leniencies_counts_failures_and_off_scale_answers_on_items_with_an_experts_mean():
    """Five items: judge (1, NaN, 9, 2, NaN), experts' mean (0, 1, 1, NaN, 2), the 9 off the scale. Errors: item 0
    alone (+1). Failed with a mean: items 1 and 4 (item 3's judge is there, its mean is not); off the scale with a
    mean: item 2. Without ``off_scale`` the counts are not written and the 9 is an error: (1 + 8) / 2 = 4.5."""
    from eval.validity.bias import leniencies

    judge = np.array([1.0, np.nan, 9.0, 2.0, np.nan])
    mean = np.array([0.0, 1.0, 1.0, np.nan, 2.0])
    off = np.array([False, False, True, False, False])
    (got,) = leniencies(judge, mean, None, [np.arange(5)], off_scale=off)
    assert (got["n"], got["mean_signed_error"], got["n_judge_failed"], got["n_judge_off_scale"]) == (1, 1.0, 2, 1)
    (before,) = leniencies(judge, mean, None, [np.arange(5)])
    assert before["n"] == 2 and before["mean_signed_error"] == pytest.approx(4.5)
    assert "n_judge_off_scale" not in before
