"""``judge-eval compare`` of runs whose MAE targets (``--target``) or correlations' references
(``--spearman-target``) differ: identical scores differ there, so no such cell is called better or worse, none enters
a table's Holm family, and every page says why."""

from __future__ import annotations

import json
import re

from tests.unit.test_compare_reference_and_counts import EXPERTS, JUDGE, _scored_run

#: The items twice over, so that each of two evaluated models holds ``MIN_PAIRED`` (30) paired items or more.
ITEMS_JUDGE, ITEMS_EXPERTS = JUDGE * 2, EXPERTS * 2
#: Two evaluated models, so that the tables by model hold cells of their own, each large enough to call.
MODELS = ["m1", "m2"] * (len(ITEMS_JUDGE) // 2)


def _run(folder, name, models=MODELS, **kwargs):
    from eval.scoring import item_table
    from tests.unit.test_eval_metrics import _table

    run = _scored_run(folder, name, ITEMS_JUDGE, ITEMS_EXPERTS, **kwargs)
    # the same items by two evaluated models: the by-model table holds two cells of each metric
    table = _table(ITEMS_JUDGE, ["ok"] * len(ITEMS_JUDGE), ITEMS_EXPERTS, models=models)
    target, spearman = kwargs.get("target", "mode"), kwargs.get("spearman_target")
    derived = item_table.derive(table, target, spearman_target=spearman)
    result = json.loads(item_table.dumps(item_table.evaluate(table, target=target, n_boot=200, derived=derived,
                                                             spearman_target=spearman)))
    result["judge"] = name
    extra = {"reference": derived.reference, "vc_judge": derived.vc_judge, "vc_experts": derived.vc_experts}
    if derived.spearman_reference is not derived.reference:
        extra["spearman_reference"] = derived.spearman_reference
    item_table.write_table(table, run / "items.parquet", extra=extra)
    (run / "metrics.json").write_text(json.dumps(result), encoding="utf-8")
    return run


def _delta_classes(page, label):
    """The css classes of compare.html's ``label`` delta cells (header "MAE delta …"), in every paired table: a
    "worse" or "better" there colours the cell as a call."""
    classes = []
    for table in re.findall(r"<table[^>]*>(.*?)</table>", page, flags=re.S):
        heads = re.findall(r"<th[^>]*>(.*?)</th>", table)
        columns = [k for k, head in enumerate(heads) if head.startswith(f"{label} delta")]
        for row in re.findall(r"<tr>(.*?)</tr>", table.split("<tbody>", 1)[-1]):
            cells = re.findall(r"<td[^>]*>(.*?)</td>", row)
            classes += [c for k in columns if k < len(cells) for c in re.findall(r'class="([^"]*)"', cells[k])]
    return classes


def _cells(result, metric):
    block = result.comparisons[0].splits["all"]
    yield block.overall[metric]
    for grouping in ("model", "task_type", "criterion"):
        for cells in block.by(grouping).values():
            if metric in cells:
                yield cells[metric]


def test_mae_against_two_targets_is_not_called_and_stays_out_of_holm(tmp_path):
    from eval.reports.html_report import render_compare_page
    from eval.scoring.compare import compare, headline, render_markdown

    a = _run(tmp_path / "A", "a")
    b = _run(tmp_path / "B", "b", target="mean", spearman_target="mode")
    result = compare([a, b], n_boot=200)
    mae = list(_cells(result, "mae"))
    assert mae and all(p.verdict == "—" and p.why_no_call == "targets differ" for p in mae)
    assert all(p.p_holm is None for p in mae)  # out of the Holm family
    assert result.comparisons[0].splits["all"].overall["mae"].delta != 0  # the targets' difference, shown
    # Spearman is against one reference on both sides: still called
    assert all(p.why_no_call is None for p in _cells(result, "spearman"))

    lines = headline(result)
    assert not any(line.endswith((": worse", ": better")) for line in lines)
    assert any("not called: targets differ" in line for line in lines)
    text = render_markdown(result)
    assert "| MAE (baseline vs experts' mode, run vs their mean) |" in text
    own = [line for line in text.splitlines() if line.startswith("| Standard test | MAE |")]
    assert len(own) == 1 and "(vs mode)" in own[0] and "(vs mean)" in own[0]
    assert "| worse |" not in text and "| better |" not in text and "— (targets differ)" in text
    page = render_compare_page(result, None)
    assert "targets differ" in page
    # no MAE delta on the page is coloured as a call; the column is there (its interval's "ci" span)
    mae_classes = _delta_classes(page, "MAE")
    assert "ci" in mae_classes and not {"worse", "better"} & set(mae_classes)
    # compare.json: the verdict "—" and the reason, read back as written
    from eval.scoring.comparison import Comparison

    data = json.loads(json.dumps(result.to_json(), default=float))
    cell = data["comparisons"][0]["splits"]["all"]["overall"]["mae"]
    assert (cell["verdict"], cell["why_no_call"]) == ("—", "targets differ")
    assert Comparison.from_json(data).comparisons[0].splits["all"].overall["mae"].why_no_call == "targets differ"

    # one target on both sides: called as usual, no reason, no mark
    same = compare([a, _run(tmp_path / "C", "c")], n_boot=200)
    assert all(p.why_no_call is None for p in _cells(same, "mae"))
    assert "(vs mode)" not in render_markdown(same)


def test_spearman_against_two_references_is_not_called_and_stays_out_of_holm(tmp_path):
    from eval.scoring.compare import compare, headline

    a = _run(tmp_path / "A", "a")
    b = _run(tmp_path / "B", "b", spearman_target="mean")
    result = compare([a, b], n_boot=200)
    spearman = list(_cells(result, "spearman"))
    assert len(spearman) >= 3  # overall, by model (two), by task type
    assert all(p.verdict == "—" and p.why_no_call == "targets differ" and p.p_holm is None for p in spearman)
    assert all(p.why_no_call is None for p in _cells(result, "mae"))  # MAE shares its target: called
    assert headline(result)  # renders
    from eval.reports.html_report import render_compare_page

    spearman_classes = _delta_classes(render_compare_page(result, None), "Spearman")
    assert "ci" in spearman_classes and not {"worse", "better"} & set(spearman_classes)


def test_a_cell_too_small_to_call_says_so_rather_than_that_the_targets_differ(tmp_path):
    """"targets differ" is the reason only where it is the reason: model m2's cell of 10 paired items is under
    ``MIN_PAIRED`` and could not be called against one target either, so it reads n.s., too few to call, as it would
    then; m1's (70 items) and the overall cell (80) are the ones the targets keep from a call."""
    from eval.scoring.compare import MIN_PAIRED, TARGETS_DIFFER, compare, render_markdown

    models = ["m1"] * 70 + ["m2"] * 10
    a = _run(tmp_path / "A", "a", models=models)
    b = _run(tmp_path / "B", "b", models=models, target="mean", spearman_target="mode")
    result = compare([a, b], n_boot=200)
    mae = list(_cells(result, "mae"))
    small = [p for p in mae if p.n_units < MIN_PAIRED]
    large = [p for p in mae if p.n_units >= MIN_PAIRED]
    assert small and large
    assert all(p.verdict == "—" and p.why_no_call == TARGETS_DIFFER for p in large)
    assert all(p.verdict == "n.s." and p.why_no_call is None and p.p_holm is None for p in small)
    assert result.comparisons[0].splits["all"].by("model")["m1"]["mae"].why_no_call == TARGETS_DIFFER
    # m2's rows of the paired tables (their last column: the paired items)
    small_rows = [line for line in render_markdown(result).splitlines()
                  if line.startswith("| m2 |") and line.endswith("| 10 |")]
    assert small_rows and not any(TARGETS_DIFFER in line for line in small_rows)
    assert all("| n.s. |" in line for line in small_rows)
