"""``criteria: auto`` on a tie: two task types, or two leaves of the chosen type, exactly as probable are no confident
choice."""

from __future__ import annotations

import re


def test_a_tie_between_task_types_falls_back_naming_it():
    """0.5 and 0.5 pass the threshold 0.5, but neither type is more likely: the fallback set, not the first type by
    name at level leaf."""
    from judge.criteria_auto.policy import choose_from_scores, fallback_criteria

    choice = choose_from_scores({"Editing": 0.5, "Advice": 0.5}, "x")
    assert (choice.level, choice.fallback, choice.criteria) == ("fallback", True, fallback_criteria())
    assert "tie" in choice.reason and "'Advice'" in choice.reason and "'Editing'" in choice.reason
    # a tie within float rounding of a type's sum over its leaves is one too
    sums = choose_from_scores({"Text plan / Literary text": 0.1, "Text plan / Official text": 0.2, "Advice": 0.3}, "x",
                               threshold=0.2)
    assert sums.level == "fallback" and "tie" in sums.reason
    # a near tie is a choice
    assert choose_from_scores({"Editing": 0.5001, "Advice": 0.4999}, "x").level == "leaf"


def test_a_tie_between_leaves_decides_at_the_task_type_without_either_leafs_variants():
    """Two leaves of the chosen type exactly as probable: the criteria the type's leaves list as one id, not the
    first leaf's variants; the Code types, whose leaves share none, fall back."""
    from judge.criteria_auto.policy import choose_from_scores, fallback_criteria, type_criteria

    choice = choose_from_scores({"Text plan / Literary text": 0.5, "Text plan / Journalistic text": 0.5}, "x")
    assert (choice.level, choice.criteria) == ("task_type", type_criteria("Text plan"))
    assert "facts__3" not in choice.criteria  # a variant the first leaf by label lists, the other does not
    assert re.search(r"leaves '.+' and '.+' tie", choice.reason)
    code = choose_from_scores({"Code creation / Python": 0.5, "Code creation / C++": 0.5}, "x")
    assert (code.level, code.criteria) == ("fallback", fallback_criteria()) and "tie" in code.reason
    # the share test alone (0.4, 0.3, 0.3: the top leaf is no tie) still takes the top leaf's variants
    share = choose_from_scores({"Text plan / Literary text": 0.4, "Text plan / Journalistic text": 0.3,
                                "Text plan / Official text": 0.3}, "x")  # fmt: skip
    assert share.level == "task_type" and "tie" not in share.reason
