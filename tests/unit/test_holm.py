"""Holm's adjustment (``eval.scoring.holm``): the values by hand, statsmodels' full garbage collection on every call
(the pitfall), and the freeze that keeps it from walking the whole process, left as it was found."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

from eval.scoring.holm import holm_adjusted_p


class _Node:
    """An object that can sit in a reference cycle and be watched through a weak reference."""

    def __init__(self):
        self.me = self


def _cycle() -> weakref.ref:
    """A garbage cycle only a collection frees, and a weak reference that dies with it."""
    return weakref.ref(_Node())


def test_the_adjusted_values_by_hand():
    """p = 0.01, 0.04, 0.03, 0.2 (m = 4): sorted 0.01, 0.03, 0.04, 0.2 times 4, 3, 2, 1 = 0.04, 0.09, 0.08, 0.2, made
    non-decreasing = 0.04, 0.09, 0.09, 0.2, in the order given 0.04, 0.09, 0.09, 0.2. Capped at 1: 0.6 x 2 = 1.2."""
    assert holm_adjusted_p([0.01, 0.04, 0.03, 0.2]) == pytest.approx([0.04, 0.09, 0.09, 0.2])
    assert holm_adjusted_p([0.3, 0.5]) == pytest.approx([0.6, 0.6])
    assert holm_adjusted_p([0.6, 0.7]).tolist() == [1.0, 1.0]
    assert holm_adjusted_p([0.02]).tolist() == [0.02]


def test_statsmodels_collects_the_whole_process_on_every_holm_call(collector_off):
    """The pitfall: ``multipletests(method="holm")`` runs ``gc.collect()`` (statsmodels/stats/multitest.py), so a
    cycle made before the call dies inside it. Should statsmodels drop that collection, this fails and
    ``eval.scoring.holm``'s freeze can go."""
    from statsmodels.stats.multitest import multipletests

    watched = _cycle()
    multipletests([0.01, 0.04], method="holm")
    assert watched() is None


def test_the_adjustment_walks_only_what_it_made_and_leaves_the_collector_as_it_found_it(collector_off):
    """Under ``holm_adjusted_p`` the objects that existed before the call are frozen: statsmodels' collection leaves
    an older cycle alone, and once the call returns nothing is frozen and the cycle is collected as before. A process
    that froze objects of its own keeps them frozen: the adjustment then runs as statsmodels runs it."""
    watched = _cycle()
    assert holm_adjusted_p([0.01, 0.04]) == pytest.approx([0.02, 0.04])
    assert watched() is not None  # not walked by statsmodels' gc.collect()
    assert gc.get_freeze_count() == 0
    gc.collect()
    assert watched() is None

    theirs = _cycle()
    gc.freeze()
    try:
        watched = _cycle()
        assert np.array_equal(holm_adjusted_p([0.01, 0.04]), [0.02, 0.04])
        assert watched() is None  # statsmodels' own collection, unchanged
        gc.collect()
        assert theirs() is not None  # still frozen: their freeze was not undone
    finally:
        gc.unfreeze()
    gc.collect()
    assert theirs() is None


@pytest.mark.parametrize("p_values", [[0.01, float("nan"), 0.03], [0.01, 1.5], [-0.01, 0.2], [0.01, float("inf")]])
def test_a_p_value_that_is_none_is_refused_not_adjusted(p_values):
    """statsmodels adjusts [0.01, NaN, 0.03] to [0.03, NaN, 0.06] without a word: the NaN counts in the family's m
    and no cell learns of it; 1.5 or -0.01 are adjusted as p-values too. The callers keep undefined cells out of
    the family (``eval.scoring.compare._callable``, ``eval.ranking.compare.holm_adjusted``); one that did not would
    get numbers, so the adjustment refuses them, naming the value."""
    with pytest.raises(ValueError, match="p-value"):
        holm_adjusted_p(p_values)
