"""The judge's failures in the validity figures, on tables small enough to derive by hand: the sentence counts every
failed item, not only those in the ceiling, and a failure on a unanimous criterion without a readable scale is no
exact answer."""

from __future__ import annotations

import numpy as np

from tests.support.validity_tables import item_table as _table
from tests.support.validity_tables import split_section as _section


def test_sentence_counts_every_failed_item_not_only_those_in_the_ceiling():
    """40 items on a 0-2 scale: items 0-19 scored by two experts, items 20-39 by one. The judge gives the truth on
    items 0-17 and fails (unparseable) on items 18-39: 22 failed items. Only items 18 and 19 have a ceiling pair (a
    leave-one-out reference needs a second expert), so the ceiling counts 2 failed items; the sentence said "the judge
    failed on 2 items". It now counts all 22 (alpha's count, every predicted item) and says how many the ceiling
    read."""
    n = 40
    truth = np.arange(n) % 3.0
    experts = np.stack([truth, truth], axis=1)
    experts[20:, 1] = np.nan
    judge = np.where(np.arange(n) < 18, truth, np.nan)
    status = ["ok"] * 18 + ["parse_failed"] * 22
    block = _section(_table(judge, experts, status=status, low=np.zeros(n), high=np.full(n, 2.0)))
    assert (block.overall.ceiling.n_items_judge_failed, block.overall.agreement.n_items_judge_failed) == (2, 22)
    assert block.sentence.endswith("the judge failed on 22 items (2 of them with a ceiling pair, each counted as its "
                                   "largest error in the ceiling).")


def _unanimous_a_with_failures():
    """40 items, two experts each: 1 on items 0-29, 0 on 30-34, 2 on 35-39; the judge agrees and fails on 0-9.
    Returns (judge, experts, status)."""
    experts = np.ones((40, 2))
    experts[30:35] = 0.0
    experts[35:] = 2.0
    judge = experts[:, 0].copy()
    judge[:10] = np.nan
    return judge, experts, ["parse_failed"] * 10 + ["ok"] * 30


def test_a_failure_on_a_unanimous_criterion_without_a_scale_is_no_exact_answer():
    """No readable scale. Criterion "a" (items 0-29): both experts give 1 on every item; the judge fails on items
    0-9 and gives 1 on the rest. Criterion "b" (items 30-39): both experts give 0 (items 30-34) or 2 (35-39), as the
    judge does. Every expert's error to the other is 0. A failure's worst error took its criterion's experts' range as
    the scale: [1, 1] on "a", so each failure cost 0, an exact answer. A range of one level tells no scale: the ends
    are the table's levels [0, 2], the reference 1 is 1 from either end, the error 1. Overall 80 pairs, 20 of them
    failed: judge MAE 20/80 = 0.25, gap 0.25 (before: 0); criterion "a": 20/60."""
    judge, experts, status = _unanimous_a_with_failures()
    block = _section(_table(judge, experts, status=status, criteria=["a"] * 30 + ["b"] * 10))
    overall, criterion = block.overall.ceiling, block.by_criterion["a"].ceiling
    assert (overall.n_pairs, overall.n_judge_failed, overall.expert_mae) == (80, 20, 0.0)
    assert overall.judge_mae == overall.gap == 0.25
    assert abs(criterion.judge_mae - 1 / 3) < 1e-12


def test_a_failure_without_a_scale_takes_its_ends_from_the_experts_only():
    """The table of the test above, and the judge answers 9 on item 39 (criterion "b", no readable scale), where it
    said 2. The ends of criterion "a" (unanimous: no scale of its own) came from the cells' value domains, which hold
    the judge's own levels where a scale is unreadable: [0, 9], so each failure on "a" cost |9 - 1| = 8 and "a"'s judge
    MAE read 20 * 8 / 60 = 8/3. From the experts' levels only the ends stay [0, 2]: 20/60 = 1/3 as before the 9, and
    compare's paired gap (the same rule, ``ceiling.scale_ends``) reads the section's overall gap: "b"'s 9 is
    |9 - 2| = 7 on each of its two pairs, (20 + 14) / 80 = 0.425."""
    from eval.validity.paired import paired_validity
    from eval.validity.section import item_scale_ends
    from judge.metrics_json.validity import AltTestSettings

    judge, experts, status = _unanimous_a_with_failures()
    judge[39] = 9.0
    table = _table(judge, experts, status=status, criteria=["a"] * 30 + ["b"] * 10)
    block = _section(table)
    assert abs(block.by_criterion["a"].ceiling.judge_mae - 1 / 3) < 1e-12
    assert abs(block.overall.ceiling.gap - 34 / 80) < 1e-12
    low, high = item_scale_ends(table)  # as compare reads them
    paired = paired_validity(judge, judge, experts, None, "mode", AltTestSettings(), n_boot=0, scale_low=low,
                             scale_high=high, ceiling_failures="worst")
    assert abs(paired["ceiling_gap"]["baseline"] - 34 / 80) < 1e-12
