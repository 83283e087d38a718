"""The numbers a ``criteria: auto`` choice is made by: a threshold that is no task-type probability is refused by
every method's constructor, and ``choose_from_scores`` takes a distribution over leaves (summing to at most one),
refusing one that sums above it with a message saying so."""

from __future__ import annotations

import math

import pytest

from judge.criteria_auto import TfidfClassifier, choose_from_scores
from judge.criteria_auto.head import HeadClassifier
from judge.criteria_auto.llm import LLMClassifier


@pytest.mark.parametrize("bad", [math.nan, -0.1, 1.5])
def test_llm_refuses_a_threshold_that_is_no_probability(bad):
    """NaN compares False with every probability: the llm method never fell back; above 1 it always would."""
    with pytest.raises(ValueError, match=rf"llm: threshold {bad!r} is not a task-type probability from 0 to 1"):
        LLMClassifier("http://127.0.0.1:8000/v1", "judge", threshold=bad)


@pytest.mark.parametrize("bad", [math.nan, -0.1, 1.5])
def test_head_refuses_a_threshold_that_is_no_probability_before_reading_its_export(bad, tmp_path):
    """Refused before anything is read: the folder here holds no export at all, so reaching the reading would fail
    with another error."""
    with pytest.raises(ValueError, match=rf"head: threshold {bad!r} is not a task-type probability from 0 to 1"):
        HeadClassifier(tmp_path / "no-export", threshold=bad)


@pytest.mark.parametrize("bad", [math.nan, -0.1, 1.5])
def test_tfidf_refuses_the_same_thresholds(bad):
    with pytest.raises(ValueError, match="not a task-type probability from 0 to 1"):
        TfidfClassifier.load(threshold=bad)


def test_the_threshold_bounds_themselves_are_taken():
    assert LLMClassifier("http://127.0.0.1:8000/v1", "judge", threshold=0.0).threshold == 0.0
    assert LLMClassifier("http://127.0.0.1:8000/v1", "judge", threshold=1).threshold == 1.0


def test_scores_that_do_not_sum_to_one_are_taken_when_they_sum_below_it():
    """Leaves left out of the scores hold the rest: Advice 0.6 alone is the Advice type at 0.6 (>= 0.5)."""
    choice = choose_from_scores({"Advice": 0.6}, "m", threshold=0.5)
    assert (choice.label, choice.level, choice.task_type_probability) == ("Advice", "leaf", 0.6)


def test_scores_summing_above_one_are_refused_up_front_saying_so():
    """Two Code creation leaves at 0.7 each (1.4) were refused as the task type's "probability 1.4 ... is not a
    probability", deep in of_leaf, while the docs said the scores need not sum to one; now the sum is checked first
    and named. 0.7 + 0.3 (one within float rounding) is taken."""
    with pytest.raises(ValueError, match=r"m: the leaf probabilities sum to 1\.4, above 1: not a distribution"):
        choose_from_scores({"Code creation / Python": 0.7, "Code creation / C++": 0.7}, "m")
    with pytest.raises(ValueError, match=r"sum to 1\.2, above 1"):  # across types too, where no type sums above 1
        choose_from_scores({"Advice": 0.6, "Fact checking": 0.6}, "m")
    taken = choose_from_scores({"Code creation / Python": 0.7, "Code creation / C++": 0.3}, "m")
    assert taken.label == "Code creation / Python" and taken.task_type_probability == pytest.approx(1.0)
