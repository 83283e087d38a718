"""The items the experts' ceiling covers, on panels small enough to derive by hand: its verdict says over how many of
the split's items and why not the rest, as the alternative annotator test's does
(``eval.validity.render.ceiling_coverage``)."""

from __future__ import annotations

import numpy as np

from tests.support.validity_tables import table_on_0_to_2

nan = np.nan


def _block(judge, experts, status=None, **settings):
    from eval.validity.section import ValiditySettings, validity_section

    table = table_on_0_to_2(np.asarray(judge, dtype=float), np.asarray(experts, dtype=float), None, status=status)
    return validity_section(table, "mode", {"standard": np.arange(len(judge))},
                            ValiditySettings(n_boot=200, **settings)).splits["standard"]


def _panel():
    """88 items on 0-2: 20 (1, 1, 1) the judge answers 1; 20 (2, 2, 1) it answers 2; 40 (0, 1, 2) it answers 0;
    5 of one expert (1) it answers 1; 3 not predicted yet (missing).

    The pairs with a leave-one-out mode: each (1, 1, 1) gives 3 (reference 1, both errors 0); each (2, 2, 1) gives 1,
    the 1 against the other two's 2 (expert error 1, judge 0: leaving out a 2 leaves (2, 1), no unique mode); no
    slot of (0, 1, 2) has one (the other two always differ); one expert has no other. 40 items with pairs, 80 pairs:
    gap (0 - 20) / 80 = -0.25, every resample's gap at most 0, so the interval lies below the 0.1 margin: inside.
    The verdict is over 40 of 88 items: 5 with fewer than 2 experts, 40 without a unique mode among the other
    experts, 3 without a prediction (40 + 5 + 40 + 3 = 88)."""
    experts = [[1, 1, 1]] * 20 + [[2, 2, 1]] * 20 + [[0, 1, 2]] * 40 + [[1, nan, nan]] * 5 + [[1, 1, 1]] * 3
    judge = [1.0] * 20 + [2.0] * 20 + [0.0] * 40 + [1.0] * 5 + [nan] * 3
    status = ["ok"] * 85 + ["missing"] * 3
    return judge, experts, status


def test_the_ceiling_verdict_says_over_how_many_items_and_why_not_the_rest():
    judge, experts, status = _panel()
    block = _block(judge, experts, status)
    ceiling = block.overall.ceiling
    assert (ceiling.n_items, ceiling.n_pairs, ceiling.verdict) == (40, 80, "inside")
    assert ceiling.gap == -0.25
    assert (ceiling.n_items_few_experts, ceiling.n_items_no_reference, ceiling.n_items_dropped) == (5, 40, 0)
    assert ("overall inside the experts' range (gap -0.25 [-0.38, -0.15]), over 40 of 88 items (5 with fewer than 2 "
            "experts, 40 without a unique mode among the other experts, 3 without a prediction);") in block.sentence


def test_failures_the_ceiling_dropped_are_named():
    """The same panel, the judge failing on 4 of the (1, 1, 1) items, under ``ceiling_failures`` ``drop``: their
    pairs are left out, so the verdict is over 36 items, 4 of them the judge failed on."""
    judge, experts, status = _panel()
    judge[:4] = [nan] * 4
    block = _block(judge, experts, status, ceiling_failures="drop")
    ceiling = block.overall.ceiling
    assert (ceiling.n_items, ceiling.n_items_dropped) == (36, 4)
    assert ("over 36 of 88 items (5 with fewer than 2 experts, 40 without a unique mode among the other experts, 4 "
            "the judge failed on, dropped, 3 without a prediction)") in block.sentence


def test_no_clause_where_the_ceiling_covers_every_item_or_the_file_has_no_counts():
    """Only the 40 items with pairs: the verdict covers all, and the sentence is as before. A file written before the
    counts reads them as None and gets no clause rather than a wrong one."""
    from eval.validity.render import ceiling_coverage
    from judge.metrics_json.validity import Ceiling

    judge, experts, _ = _panel()
    block = _block(judge[:40], experts[:40])
    assert "overall inside the experts' range (gap -0.25 [-0.38, -0.15]);" in block.sentence
    written = block.overall.ceiling.to_json()
    older = {k: v for k, v in written.items()
             if k not in ("n_items_few_experts", "n_items_no_reference", "n_items_dropped")}
    read = Ceiling.from_json({**older, "n_items": 20})
    assert read.n_items_few_experts is None
    assert ceiling_coverage(read, 40, 0) == ""
