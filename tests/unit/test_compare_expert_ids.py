"""``judge-eval compare`` on runs whose shared items name other experts: the same scores given by other people (a
data revision that renamed or reassigned the panel) are another item's labels, refused as other labels are; runs
whose tables name no experts, or that name the same ones, are paired as before."""

from __future__ import annotations

import pytest

from tests.unit.test_compare_reference_and_counts import EXPERTS, JUDGE
from tests.unit.test_compare_unequal_runs import _run_with


def _named_run(folder, name, expert_ids):
    """A scored run of the forty hand items (as ``_scored_run``) whose experts are named ``expert_ids`` (one list
    per item, parallel to its scores; None: the table names no experts)."""
    return _run_with(folder, name, [f"i{k}" for k in range(len(JUDGE))], JUDGE, EXPERTS, ["standard"] * len(JUDGE),
                     expert_ids=expert_ids)


PANEL = [["e1", "e2", "e3"]] * len(JUDGE)


def test_the_same_scores_given_by_other_experts_are_refused_naming_the_item_and_both_panels(tmp_path):
    """Item i7's scores [1, 1, 2] come from e1, e2, e3 in the baseline and from e2, e3, e1 in the run (the same
    people, other scores each): the alt-test and the paired rho read each expert's own items, so pairing them
    compared two panels. Refused in one line: what differs, on how many items, the first item and both lists."""
    from eval.scoring.compare import compare

    rotated = [list(ids) for ids in PANEL]
    rotated[7] = ["e2", "e3", "e1"]
    renamed = [["p1", "p2", "p3"]] * len(JUDGE)
    a = _named_run(tmp_path / "A", "a", PANEL)
    for name, ids, count, shown in (("B", rotated, 1, "['e2', 'e3', 'e1']"), ("C", renamed, 40, "['p1', 'p2', 'p3']")):
        with pytest.raises(ValueError) as err:
            compare([a, _named_run(tmp_path / name, name.lower(), ids)], n_boot=50)
        said = str(err.value)
        assert "hold different items under the same ids: the experts' ids differ" in said
        assert f"on {count} of the 40 items both hold" in said
        first = "i7" if name == "B" else "i0"
        assert f"(item '{first}': ['e1', 'e2', 'e3'] in {a}, {shown} in {tmp_path / name})" in said
        assert "\n" not in said


def test_runs_naming_the_same_experts_or_none_are_paired(tmp_path):
    """The same panel on both sides, or a table that names no experts (the released POLLUX data; an items.parquet
    written before the ids were kept) beside one that does: nothing is known to differ, and the runs are paired."""
    from eval.scoring.compare import compare

    a = _named_run(tmp_path / "A", "a", PANEL)
    same = compare([a, _named_run(tmp_path / "B", "b", PANEL)], n_boot=50)
    assert same.comparisons[0].splits["all"].overall["mae"].n == 40
    unnamed = compare([a, _named_run(tmp_path / "C", "c", None)], n_boot=50)
    assert unnamed.comparisons[0].splits["all"].overall["mae"].n == 40


def test_an_item_naming_no_experts_beside_one_naming_them_is_paired(tmp_path):
    """Item i3 names its experts in the baseline and none in the run (a data revision that added ids to some items):
    its labels are the same, and an item naming none is not known to differ, as a table naming none is not; a
    second item whose panel does differ is still refused."""
    from eval.scoring.compare import compare

    a = _named_run(tmp_path / "A", "a", PANEL)
    unnamed = [list(ids) for ids in PANEL]
    unnamed[3] = []
    paired = compare([a, _named_run(tmp_path / "B", "b", unnamed)], n_boot=50)
    assert paired.comparisons[0].splits["all"].overall["mae"].n == 40
    unnamed[7] = ["e2", "e3", "e1"]
    with pytest.raises(ValueError, match=r"the experts' ids differ on 1 of the 40 items both hold \(item 'i7'"):
        compare([a, _named_run(tmp_path / "C", "c", unnamed)], n_boot=50)
