"""``judge-eval compare``'s scale ends for the paired ceiling gap (``eval.scoring.compare._scale_ends``): the same
ends as the baseline's own section, whatever split the pairs are taken in."""

from __future__ import annotations

import numpy as np

from tests.support.validity_tables import item_table

nan = np.nan


def test_a_split_takes_the_whole_tables_fallback_ends_as_the_section_does():
    """Two splits, neither item scale readable (NaN ends). "standard": 30 items of criterion "a", both experts 1 on
    every item (unanimous: its own expert scores tell no scale), the judge right on 20 and failed on 10; "zero_shot":
    10 items of criterion "b", experts 0 on five and 4 on five. The section's fallback for "a" is the whole table's
    expert range, [0, 4] (``ceiling.scale_ends``): a failure's reference is the other expert's 1, the farther end 4,
    an error of 3 on each of the failed items' 2 pairs, judge MAE 10 * 2 * 3 / 60 = 1, the experts' 0: gap 1.

    compare passed only the split's items' experts, whose range is [1, 1]: every failure cost 0 and its paired
    baseline gap read 0 beside the section's 1. Now it takes the whole table's ends, then the split's items."""
    from eval.scoring.compare import _scale_ends
    from eval.validity.paired import paired_validity
    from eval.validity.scale_reading import reading_ends
    from eval.validity.section import ValiditySettings, validity_section
    from judge.metrics_json.validity import AltTestSettings

    n_a, n_b = 30, 10
    experts = np.ones((n_a + n_b, 2))
    experts[n_a:n_a + 5] = 0.0
    experts[n_a + 5:] = 4.0
    judge = experts[:, 0].copy()
    judge[:10] = nan
    status = ["parse_failed"] * 10 + ["ok"] * (n_a + n_b - 10)
    table = item_table(judge, experts, status=status, criteria=["a"] * n_a + ["b"] * n_b,
                       low=np.full(n_a + n_b, nan), high=np.full(n_a + n_b, nan))
    table.split[n_a:] = "zero_shot"
    standard = np.arange(n_a)
    section = validity_section(table, "mode", {"standard": standard, "zero_shot": np.arange(n_a, n_a + n_b)},
                               ValiditySettings(n_boot=0, alpha_boot=0))
    assert abs(section.splits["standard"].overall.ceiling.gap - 1.0) < 1e-12

    (low, high), rating = _scale_ends(table, standard, None)
    assert np.array_equal(low, np.zeros(n_a)) and np.array_equal(high, np.full(n_a, 4.0))
    assert all(np.array_equal(mine, shared[standard]) for mine, shared in zip(rating, reading_ends(table)[2]))
    paired = paired_validity(judge[standard], judge[standard], experts[standard], None, "mode", AltTestSettings(),
                             n_boot=0, scale_low=low, scale_high=high, ceiling_failures="worst")
    assert abs(paired["ceiling_gap"]["baseline"] - 1.0) < 1e-12
