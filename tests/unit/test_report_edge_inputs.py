"""report.md and report.html on inputs at their edges: names that are Markdown or carry bidirectional controls, a
test the judge failed on entirely, an unfinished run, a split without items, a verdict judge scored against the
experts' mean, and the small figures (one item, one criterion, a p-value or an interval end that rounds to 0)."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest

import judge
from eval.reports import html_report
from eval.reports.report import BIDI_CONTROLS, markdown_table, md_text, references_note, run_notes
from eval.scoring.score import score
from eval.validity.agreement import agreement
from eval.validity.render import _overall_rows, markdown_lines
from eval.validity.section import split_sentence
from judge.metrics_json.metrics import Metrics, Notes
from judge.metrics_json.validity import ValiditySplit

#: a criterion name and an expert id that are Markdown (code, bold, a javascript: link, an entity) and reverse the
#: rest of their line (U+202E)
CRITERION = "Крит `tick` **bold** [x](javascript:alert(1)) &amp; \u202eevil"
EXPERT = "exp`1` **b** [y](javascript:alert(2))\u2066"


@pytest.fixture(scope="module")
def hostile_run(tmp_path_factory):
    """The bundled sample with one criterion and one expert renamed to ``CRITERION`` / ``EXPERT``; the judge fails on
    every Zero-Shot item, copies the first expert on the Standard ones, and has no prediction for two of them."""
    root = tmp_path_factory.mktemp("hostile")
    rows = [json.loads(line) for line in judge.sample_data_path().read_text(encoding="utf-8").splitlines()]
    renamed = rows[0]["criteria_name"]
    for row in rows:
        if row["criteria_name"] == renamed:
            row["criteria_name"] = CRITERION
        row["expert_ids"] = [EXPERT if e == "expert-02" else e for e in row.get("expert_ids") or []]
    data = root / "data.jsonl"
    data.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    records = {r.id: r for r in judge.load_records(data)}
    standard = [row["id"] for row in rows if judge.split_of(records[row["id"]]) == "standard"]
    lines = []
    for row in rows:
        if row["id"] in standard[:2]:
            continue  # an unfinished run
        if judge.split_of(records[row["id"]]) == "zero_shot":
            lines.append({"id": row["id"], "judge": "j", "raw_output": "garbage", "feedback": "", "score": None,
                          "parse_ok": False, "error": "no_score", "score_source": None, "latency_s": 0.0})
        else:
            value = float(row["expert_scores"][0])
            lines.append({"id": row["id"], "judge": "j", "raw_output": f"[RESULT] {value:g} [END]", "feedback": "",
                          "score": value, "parse_ok": True, "error": None, "score_source": "verdict",
                          "latency_s": 0.0})
    (root / "predictions.jsonl").write_text("".join(json.dumps(p) + "\n" for p in lines), encoding="utf-8")
    out = root / "run"
    score(root / "predictions.jsonl", data, out, n_boot=20)
    metrics = json.loads((out / "metrics.json").read_text(encoding="utf-8"))
    return SimpleNamespace(out=out, metrics=metrics, typed=Metrics.from_json(metrics),
                           md=(out / "report.md").read_text(encoding="utf-8"),
                           page=(out / "report.html").read_text(encoding="utf-8"))


def test_validity_tables_escape_names_as_the_other_tables_do(hostile_run):
    """The validity tables' criterion and expert cells are ``md_text``, as every other table's names: no code span,
    bold, link or entity of the data's own reaches report.md."""
    md = hostile_run.md
    validity = md[md.index("## Validity"):md.index("## Zero-Shot test\n")]
    assert f"| {md_text(CRITERION)} |" in validity and f"| {md_text(EXPERT)} |" in validity
    for raw in ("`tick`", "**bold**", "[x](javascript:", "&amp; ", "`1`", "[y](javascript:"):
        assert raw not in validity
    # the renderer takes the report's escaping, passed in as the table writer is
    lines = "\n".join(markdown_lines(hostile_run.typed, markdown_table, md_text))
    assert f"| {md_text(CRITERION)} |" in lines


def test_a_test_without_one_readable_verdict_has_no_alpha_with_the_judge(hostile_run):
    """Every Zero-Shot verdict failed: alpha with the judge, the difference and its interval are null in
    metrics.json and "—" in the report, not the experts' alpha and 0.000 [0.00, 0.00]; the marginal homogeneity
    test says it had no item to tabulate (not that none lay off the diagonal), and the report shows why."""
    overall = hostile_run.metrics["validity"]["splits"]["zero_shot"]["overall"]
    agreed = overall["agreement"]
    assert agreed["alpha_experts"] is not None
    assert (agreed["alpha_with_judge"], agreed["alpha_difference"], agreed["alpha_difference_ci"]) == (
        None, None, [None, None])
    assert overall["alpha_with_judge"] is None
    homogeneity = overall["marginal_homogeneity"]
    assert homogeneity["n"] == 0 and "off the diagonal" not in homogeneity["why"]
    rows = dict(_overall_rows(hostile_run.typed.validity.splits["zero_shot"]))
    assert "with the judge —" in rows["Krippendorff's α (ordinal)"]
    assert rows["Krippendorff's α (ordinal)"].endswith("difference —")
    assert homogeneity["why"] in rows["marginal homogeneity (Stuart–Maxwell)"]


def test_agreement_without_a_judge_score_has_no_alpha_with_the_judge():
    """The statistic itself: no judge level on the scale, no rating added, so nothing to compare."""
    experts = np.array([[0.0, 1, 1], [2, 2, 1], [0, 0, 0], [1, 2, 2]])
    result = agreement(np.full(4, np.nan), experts, np.array([1.0, 2, 0, 2]), np.array([0.0, 1, 2]), n_boot=20,
                       rng=np.random.default_rng(0))
    assert result["alpha_experts"] is not None
    assert (result["alpha_with_judge"], result["alpha_difference"], result["alpha_difference_ci"]) == (
        None, None, [None, None])


def test_report_table_10_says_how_many_items_its_mae_is_over(hostile_run):
    """Table 10's MAE in brackets is over the ``scored`` items: a column says how many, metrics.json's n_scored."""
    md = hostile_run.md
    table = md[md.index("### Standard test: mean score per evaluated model"):]
    lines = [line for line in table.splitlines() if line.startswith("| ")]
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    assert "scored" in header
    means = hostile_run.metrics["splits"]["standard"]["model_means"]
    avg = next(line for line in lines if line.startswith("| **Avg.**"))
    assert [c.strip() for c in avg.strip("|").split("|")][header.index("scored")] == str(means["all"]["n_scored"])


def test_the_unfinished_run_note_comes_right_after_the_summary_table(hostile_run):
    """report.md says the run is unfinished right under the summary table, as report.html at its top, not after the
    whole validity section."""
    md = hostile_run.md
    note = md.index("**2 items have no prediction**")
    assert md.index("## Summary") < note < md.index("VC under random labelling") < md.index("## Validity")


def test_report_html_drops_bidirectional_controls_as_report_md_does(hostile_run):
    """One set of bidirectional controls, report.md's, is dropped from report.html's text and its explorer data."""
    assert html_report.BIDI_CONTROLS is BIDI_CONTROLS
    assert not BIDI_CONTROLS.search(hostile_run.md) and not BIDI_CONTROLS.search(hostile_run.page)
    assert html_report._e("a\u202eb\u2067c<") == "abc&lt;"


def test_the_vc_intro_says_what_vc_is_over(hostile_run):
    """VC needs a parsed verdict, not a scored item (a mode tie has VC): the intro says so."""
    assert "over the items it scored" not in hostile_run.md
    assert "over every item with a parsed verdict" in hostile_run.md


def test_a_verdict_judge_against_the_mean_is_not_called_a_regression_judge():
    """``--target mean`` names the flag unless the run has regression scores."""
    def result(n_regression):
        return SimpleNamespace(target="mean", settings=SimpleNamespace(spearman_target=None),
                               notes=Notes(n_regression_scores=n_regression))

    assert "(`--target mean`)" in references_note(result(0)) and "regression" not in references_note(result(0))
    assert "(a regression judge)" in references_note(result(12))


def _cell(verdict=None, **changes) -> dict:
    cell = {"n_items": 40, "value_domain": [0.0, 1.0],
            "ceiling": {"reference": "mode", "n_judge_failed": 0, "n_items": 40, "n_pairs": 80, "expert_mae": 0.1,
                        "judge_mae": 0.7, "gap": 0.61, "gap_ci": [0.22, 0.99], "expert_kappa": None,
                        "judge_kappa": None, "verdict": verdict},
            "leniency": {"n": 40, "mean_signed_error": 0.0001, "ci": [-0.0001, 0.2], "direction": "neither"},
            "alt_test": {"available": False, "why": "the data names no experts"}}
    return {**cell, **changes}


def _split(overall: dict, criteria: dict) -> ValiditySplit:
    return ValiditySplit.from_json({"overall": overall, "alt_test_domains": {}, "by_task_type": {},
                                    "by_criterion": criteria, "sentence": ""})


def test_the_lead_sentence_gives_the_splits_overall_ceiling_verdict():
    """Beside the criteria counts, the split's own verdict with its gap and interval."""
    block = _split(_cell("outside"), {"a": _cell("inside"), "b": _cell("inconclusive")})
    assert ("inside the experts' range on 1 of 2 criteria (1 inconclusive); overall outside the experts' range "
            "(gap +0.61 [0.22, 0.99])" in split_sentence(block))
    assert "overall" not in split_sentence(_split(_cell(None), {"a": _cell(None)}))


def test_a_split_without_items_says_so_and_shows_no_tables():
    """No item at all: neither the experts nor the judge are short of anything, and the tables would be dashes."""
    empty = _cell(n_items=0, n_items_missing=0)
    block = _split(empty, {})
    assert split_sentence(block) == "No items in this split: no validity figures."
    block = ValiditySplit.from_json({**block.to_json(), "sentence": split_sentence(block)})
    result = SimpleNamespace(validity=SimpleNamespace(splits={"zero_shot": block}, named_experts=True,
                                                      settings=SimpleNamespace(ceiling_failures="worst")))
    lines = "\n".join(markdown_lines(result, markdown_table, md_text))
    assert "No items in this split: no validity figures." in lines and "| Figure | Value |" not in lines
    assert "| Figure |" not in "".join(html_report.validity_blocks(result, html_report._e))


def test_small_figures_read_in_one_precision_with_plurals():
    """One criterion, one failed item, a p-value below 0.0005, interval ends that round to -0.00, and the alpha
    difference's interval at the difference's own precision."""
    agreed = {"value_domain": [0.0, 1.0], "alpha_experts": 0.5, "alpha_with_judge": 0.5, "alpha_difference": 0.0,
              "alpha_difference_ci": [-0.0001, 0.0002], "alpha_boot": {"resamples": 20, "items_per_resample": 40},
              "n_kappa": 40, "kappa_quadratic": 0.4, "by_expert_agreement": {}, "n_items_judge_failed": 1}
    homogeneity = {"n": 40, "judge_margin": [10.0, 30.0], "experts_margin": [30.0, 10.0], "levels": [0.0, 1.0],
                   "statistic": 20.0, "df": 1, "p_value": 7.7e-06}
    block = _split(_cell(None, agreement=agreed, marginal_homogeneity=homogeneity), {"a": _cell("outside")})
    assert "inside the experts' range on 0 of 1 criterion (1 outside)" in split_sentence(block)
    rows = dict(_overall_rows(block))
    assert rows["Krippendorff's α (ordinal)"] == ("experts 0.50, with the judge 0.50 (over its readable verdicts: 1 "
                                                  "failed item left out), difference 0.000 [0.000, 0.000]")
    assert rows["marginal homogeneity (Stuart–Maxwell)"] == ("χ² 20.00, df 1, p < 0.001 (over 40 items; 1 failed item "
                                                              "left out)")
    assert rows["leniency (+ = lenient)"] == "0.000 [0.000, 0.200]: neither"
    none = _split(_cell(None), {"a": _cell(None)})
    assert "no ceiling verdict on the one criterion (no interval)" in split_sentence(none)


def test_one_missing_item_is_one_item():
    """The unfinished-run note in the singular."""
    cell = SimpleNamespace(n_missing=1, n_abstained=0, n_all_abstained=0)
    result = SimpleNamespace(splits={"all": SimpleNamespace(overall=cell)})
    assert run_notes(result) == ["**1 item has no prediction** (the run is unfinished): it is not in `n`."]


def test_a_double_asterisk_inside_a_code_span_is_text_on_the_pages():
    """report.md's sentences name data files and rows in code spans; a ``**`` in one is its characters, as Markdown
    reads it, not the start of bold: the page's bold tags open and close where the sentence's own ``**`` are, and
    HTML in the text stays escaped."""
    from eval.reports.html_report import _md_text

    assert _md_text("**3 scores** off scale (`sh**ard<b>.parquet: row 3`, `a`): scored as given.") == (
        "<b>3 scores</b> off scale (<code>sh**ard&lt;b&gt;.parquet: row 3</code>, <code>a</code>): scored as given.")
    assert _md_text("**10 items have no prediction** (the run is unfinished): they are not in `n`.") == (
        "<b>10 items have no prediction</b> (the run is unfinished): they are not in <code>n</code>.")
    assert _md_text("an odd ** opens bold to the end") == "an odd <b> opens bold to the end</b>"
