"""The alternative annotator test (eval.validity.alt_test): by hand on five items, and the authors' own figures on a
slice of their annotations."""

from __future__ import annotations

import json
import math
import os
import warnings
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import t as student_t

from eval.validity.alt_test import AltTestSettings, alt_test, by_rejected, indicators, prepare, summarise_by_domain

# Five items, three experts A, B, C (columns), the judge J.
FIVE = np.array([[2, 2, 1], [1, 1, 1], [0, 1, 1], [2, 1, 2], [1, 2, 2]], dtype=float)
JUDGE = np.array([2, 1, 1, 0, 2], dtype=float)
IDS = np.array([["A", "B", "C"]] * 5, dtype=object)
FIVE_ITEMS = AltTestSettings(min_items_per_expert=5)


def test_five_items_by_hand():
    """Indicators, p-values, BY and omega/rho of a five-item alt-test, every number derived below.

    neg_rmse against the other two experts; W_f = [judge >= expert], W_h = [expert >= judge], d = W_f - W_h:
      A out (others B, C): item 1 (2,1): A=2 and J=2 both sqrt(.5), tie -> d=0; item 2 (1,1): both 0, tie -> 0;
        item 3 (1,1): A=0 -> 1, J=1 -> 0, judge -> d=1; item 4 (1,2): A=2 -> sqrt(.5), J=0 -> sqrt(2.5), expert ->
        d=-1; item 5 (2,2): A=1 -> 1, J=2 -> 0, judge -> d=1.  d_A = [0,0,1,-1,1], mean(W_f) = 4/5.
      B out (others A, C): items 1,2,3,5 tie (B equals J), item 4 (2,2): B=1 -> 1, J=0 -> 2, expert -> d=-1.
        d_B = [0,0,0,-1,0], mean(W_f) = 4/5.
      C out (others A, B): item 1 (2,2): C=1 -> 1, J=2 -> 0, judge -> d=1; items 2,3,5 tie; item 4 (2,1): C=2 ->
        sqrt(.5), J=0 -> sqrt(2.5), expert -> d=-1.  d_C = [1,0,0,-1,0], mean(W_f) = 4/5.
    t = (mean(d) + eps) / (sd(d, ddof=1) / sqrt(5)), eps = 0.2, 4 degrees of freedom:
      A: mean .2, sum of squared deviations .04+.04+.64+1.44+.64 = 2.8, var .7 -> t = .4 / sqrt(.7/5) = 1.069045
      B: mean -.2, squares 4*.04 + .64 = .8, var .2 -> t = 0 / sqrt(.2/5) = 0 -> p = .5
      C: mean 0, squares 1+1 = 2, var .5 -> t = .2 / sqrt(.5/5) = .632456
    rho = mean(4/5, 4/5, 4/5) = .8.
    """
    item, slot, w_judge, w_expert, counts = indicators(JUDGE, FIVE, np.ones_like(IDS, dtype=bool), FIVE_ITEMS)
    d = {name: (w_judge - w_expert)[slot == k][np.argsort(item[slot == k])] for k, name in enumerate("ABC")}
    assert d["A"].tolist() == [0, 0, 1, -1, 1]
    assert d["B"].tolist() == [0, 0, 0, -1, 0]
    assert d["C"].tolist() == [1, 0, 0, -1, 0]
    assert counts == {"n_items_few_experts": 0, "n_items_judge_failed": 0}

    result = alt_test(JUDGE, FIVE, IDS, FIVE_ITEMS)
    p = {row["expert"]: row["p_value"] for row in result["experts"]}
    assert p["A"] == pytest.approx(student_t.sf(0.4 / math.sqrt(0.7 / 5), 4))
    assert p["A"] == pytest.approx(student_t.sf(1.069045, 4), abs=1e-6)
    assert p["B"] == pytest.approx(0.5)
    assert p["C"] == pytest.approx(student_t.sf(0.2 / math.sqrt(0.5 / 5), 4))
    assert result["advantage_probability"] == pytest.approx(0.8)
    # q = 0.05 (m = 3, H_3 = 11/6): the smallest threshold is 1/3 * .05 / (11/6) = .0091; no p-value is that small.
    assert result["winning_rate"] == 0.0 and result["passed"] is False and result["n_experts_tested"] == 3


def test_benjamini_yekutieli_steps_up_as_the_reference():
    """BY at q = 0.9 on the five-item p-values: thresholds i/3 * .9/(11/6) = .1636, .3273, .4909; sorted p = A .173
    (above its own .1636), C .280 (below .3273), B .5 (above .4909): the step-up rejects A and C, omega = 2/3."""
    result = alt_test(JUDGE, FIVE, IDS, AltTestSettings(min_items_per_expert=5, q=0.9))
    assert {r["expert"]: r["rejected"] for r in result["experts"]} == {"A": True, "B": False, "C": True}
    assert result["winning_rate"] == pytest.approx(2 / 3) and result["passed"] is True
    # scipy's adjusted p-values against the hand-written step-up rule, on the same three p-values
    p = np.array([r["p_value"] for r in result["experts"]])
    adjusted, rejected = by_rejected(p, 0.9)
    order = np.argsort(p)
    thresholds = np.arange(1, 4) / 3 * 0.9 / (1 + 1 / 2 + 1 / 3)
    last = max(i for i in range(3) if p[order][i] <= thresholds[i])
    assert set(np.flatnonzero(rejected)) == set(order[:last + 1])


def test_a_judge_failure_is_a_loss_unless_dropped():
    """A sixth item the judge failed: with failures=loss every expert wins it (A: mean(W_f) 4/6); with drop the
    result is the five-item one (the reference's rule)."""
    experts = np.vstack([FIVE, [[1, 1, 2]]])
    judge = np.r_[JUDGE, np.nan]
    ids = np.array([["A", "B", "C"]] * 6, dtype=object)
    lost = alt_test(judge, experts, ids, FIVE_ITEMS)
    assert {r["expert"]: r["n_items"] for r in lost["experts"]} == {"A": 6, "B": 6, "C": 6}
    assert lost["experts"][0]["advantage_probability"] == pytest.approx(4 / 6)
    assert lost["n_items_judge_failed"] == 1
    dropped = alt_test(judge, experts, ids, AltTestSettings(min_items_per_expert=5, failures="drop"))
    five = alt_test(JUDGE, FIVE, IDS, FIVE_ITEMS)
    assert dropped["experts"] == five["experts"] and dropped["advantage_probability"] == five["advantage_probability"]


def test_constant_difference_rule_and_untested_experts():
    """All ties (d = 0 > -eps) gives p = 0 and a rejection; all expert wins (d = -1) p = 1; an expert below the item
    minimum is listed as untested and left out of omega; no ids: unavailable, with the reason."""
    experts = np.array([[1, 1, 1]] * 4 + [[1, 1, np.nan]], dtype=float)
    ids = np.array([["A", "B", "C"]] * 5, dtype=object)
    result = alt_test(np.ones(5), experts, ids, AltTestSettings(min_items_per_expert=5))
    assert [(r["expert"], r["p_value"], r["constant_difference"]) for r in result["experts"]] == [
        ("A", 0.0, True), ("B", 0.0, True)]
    assert result["untested"] == [{"expert": "C", "n_items": 4}] and result["winning_rate"] == 1.0
    worse = alt_test(np.full(5, 3.0), experts, ids, AltTestSettings(min_items_per_expert=5))
    assert [r["p_value"] for r in worse["experts"]] == [1.0, 1.0] and worse["passed"] is False
    assert alt_test(np.ones(5), experts, None)["available"] is False


def test_per_domain_one_correction_over_all_domain_expert_p_values():
    """Two domains holding the five items each: alone, each passes at q = 0.9 (above); corrected as one family of
    six p-values (.173, .173, .280, .280, .5, .5; thresholds i/6 * .9 / H_6 with H_6 = 2.45: .0612, .1224, .1837,
    .2449, .3061, .3673) none is rejected, so the judge passes in 0 of 2 domains."""
    experts, judge, ids = np.vstack([FIVE, FIVE]), np.r_[JUDGE, JUDGE], np.vstack([IDS, IDS])
    domains = np.array(["x"] * 5 + ["y"] * 5, dtype=object)
    settings = AltTestSettings(min_items_per_expert=5, q=0.9)
    result = summarise_by_domain(prepare(judge, experts, ids, settings), settings, domains)
    assert (result["n_passed"], result["n_domains"]) == (0, 2)
    assert [len(result["by_domain"][label]["experts"]) for label in ("x", "y")] == [3, 3]
    assert all(alt_test(judge[domains == d], experts[domains == d], ids[domains == d], settings)["passed"]
               for d in ("x", "y"))


# ---- the authors' figures on their own data
# Their annotations are not redistributed here (the repository carries no licence): the tests read
# nitaytech/AltTest's data/10k_prompts/{human,llm}_annotations.json from $ALTTEST_DATA, or from shared/alttest/
# beside the checkout, and skip with that reason when neither holds them. The slice: the first 200 items by
# number among those any human annotated, all 13 annotators, and three of the LLMs.
ALTTEST_DIRS = [Path(os.environ["ALTTEST_DATA"])] if os.environ.get("ALTTEST_DATA") else []
ALTTEST_DIRS.append(Path(__file__).resolve().parents[3] / "shared" / "alttest" / "10k_prompts")
SLICE_ITEMS = 200
# omega and rho as the reference notebook's alt_test computes them on this slice (run outside this repository with
# the notebook's code).
REFERENCE = [
    ("gpt-4o", "neg_rmse", 0.15, 0.0, 0.7348894337971935),
    ("gpt-4o", "neg_rmse", 0.2, 0.6666666666666666, 0.7348894337971935),
    ("gpt-4o", "accuracy", 0.2, 0.8333333333333334, 0.7941710924533628),
    ("mistral-v03", "accuracy", 0.2, 0.6666666666666666, 0.7903329415933843),
    ("llama-31", "neg_rmse", 0.2, 0.0, 0.6745060266255493),
]


def _authors_slice():
    folder = next((d for d in ALTTEST_DIRS if (d / "human_annotations.json").is_file()), None)
    if folder is None:
        pytest.skip("the alt-test authors' annotations are not here: set ALTTEST_DATA to a checkout of "
                    "nitaytech/AltTest's data/10k_prompts (not redistributed: the repository has no licence)")
    humans = json.loads((folder / "human_annotations.json").read_text(encoding="utf-8"))
    llm_scores = json.loads((folder / "llm_annotations.json").read_text(encoding="utf-8"))
    number = lambda item: int(item.split("_")[1])  # noqa: E731 - "item_12" -> 12
    items = sorted({item for scores in humans.values() for item in scores}, key=number)[:SLICE_ITEMS]
    index = {item: i for i, item in enumerate(items)}
    per_item = np.zeros(len(items), dtype=int)
    for scores in humans.values():
        for item in scores:
            if item in index:
                per_item[index[item]] += 1
    width = int(per_item.max())
    experts = np.full((len(items), width), np.nan)
    ids = np.full((len(items), width), None, dtype=object)
    filled = np.zeros(len(items), dtype=int)
    for rater, scores in humans.items():
        for item, score in scores.items():
            if item in index:
                i = index[item]
                experts[i, filled[i]], ids[i, filled[i]] = float(score), rater
                filled[i] += 1
    llms = {name: np.array([float(llm_scores[name].get(item, np.nan)) for item in items])
            for name in ("gpt-4o", "mistral-v03", "llama-31")}
    return experts, ids, llms


@pytest.mark.parametrize(("llm", "scoring", "epsilon", "omega", "rho"), REFERENCE)
def test_reproduces_the_reference_on_the_authors_annotations(llm, scoring, epsilon, omega, rho):
    """The authors' 10k_prompts annotations (13 annotators, 200 items, items with one annotator dropped, 7
    annotators under 30 items untested): omega and rho as their notebook computes them."""
    experts, ids, llms = _authors_slice()
    result = alt_test(llms[llm], experts, ids, AltTestSettings(epsilon=epsilon, scoring=scoring))
    assert result["n_experts_tested"] == 6 and len(result["untested"]) == 7
    assert result["winning_rate"] == pytest.approx(omega, abs=1e-12)
    assert result["advantage_probability"] == pytest.approx(rho, abs=1e-12)


def test_reproduces_the_reference_drop_rule_on_the_authors_annotations():
    """gpt-4o with every 7th item's annotation removed (171 left): failures=drop gives the notebook's figures
    (omega 2/3, rho 0.7293551160191784 at eps 0.2); failures=loss counts the 29 gaps against the judge instead."""
    experts, ids, llms = _authors_slice()
    judge = llms["gpt-4o"].copy()
    judge[np.arange(len(judge)) % 7 == 0] = np.nan
    dropped = alt_test(judge, experts, ids, AltTestSettings(failures="drop"))
    assert dropped["winning_rate"] == pytest.approx(2 / 3)
    assert dropped["advantage_probability"] == pytest.approx(0.7293551160191784, abs=1e-12)
    lost = alt_test(judge, experts, ids, AltTestSettings(failures="loss"))
    assert lost["advantage_probability"] < dropped["advantage_probability"]


def _reference_alt_test():
    """The notebook's own ``alt_test`` (``alt_test_example.ipynb``, its first two code cells), executed from the
    authors' checkout that ``$ALTTEST_DATA`` lies in (``<checkout>/data/10k_prompts``); skip when it is not there."""
    folder = next((d for d in ALTTEST_DIRS if (d / "human_annotations.json").is_file()), None)
    notebook = folder.parents[1] / "alt_test_example.ipynb" if folder is not None else None
    if notebook is None or not notebook.is_file():
        pytest.skip("the alt-test authors' checkout is not here: set ALTTEST_DATA to <nitaytech/AltTest>/data/10k_prompts")
    cells = ["".join(c["source"]) for c in json.loads(notebook.read_text(encoding="utf-8"))["cells"]
             if c["cell_type"] == "code"]
    namespace: dict = {}
    for cell in cells[:2]:  # imports, then the helpers and alt_test; the later cells plot and simulate
        exec(cell, namespace)  # noqa: S102 - the authors' reference code, from their checkout, opt-in
    return folder, namespace["alt_test"]


def test_matches_the_reference_notebook_on_all_the_authors_annotations(capsys):
    """Every item and annotator of 10k_prompts, every LLM, both scorings, three epsilons: omega and rho equal the
    notebook's ``alt_test`` run on the same annotations (``failures="drop"``, the reference's rule; items without
    an LLM annotation are the gaps it drops)."""
    folder, reference = _reference_alt_test()
    humans = json.loads((folder / "human_annotations.json").read_text(encoding="utf-8"))
    llm_scores = json.loads((folder / "llm_annotations.json").read_text(encoding="utf-8"))
    items = sorted({item for scores in humans.values() for item in scores})
    index = {item: i for i, item in enumerate(items)}
    width = max(sum(item in scores for scores in humans.values()) for item in items)
    experts = np.full((len(items), width), np.nan)
    ids = np.full((len(items), width), None, dtype=object)
    filled = np.zeros(len(items), dtype=int)
    for rater, scores in humans.items():
        for item, score in scores.items():
            i = index[item]
            experts[i, filled[i]], ids[i, filled[i]] = float(score), rater
            filled[i] += 1
    compared = 0
    for name, labels in llm_scores.items():
        judge = np.array([float(labels.get(item, np.nan)) for item in items])
        for scoring in ("neg_rmse", "accuracy"):
            for epsilon in (0.1, 0.15, 0.2):
                omega, rho = reference(labels, humans, scoring, epsilon=epsilon)
                ours = alt_test(judge, experts, ids, AltTestSettings(epsilon=epsilon, scoring=scoring, failures="drop"))
                assert (ours["winning_rate"], ours["advantage_probability"]) == pytest.approx((omega, rho), abs=1e-12), \
                    (name, scoring, epsilon)
                compared += 1
    capsys.readouterr()  # the notebook prints the annotators it skips
    assert compared == 6 * len(llm_scores) and len(llm_scores) >= 3


def test_vectorised_t_tests_equal_scipys_one_sample_test():
    """The per-family masked-matrix test (scipy.stats.mstats.ttest_1samp, one call for all experts) gives
    scipy.stats.ttest_1samp's p-value for each expert's own vector, and the constant rule for constant ones."""
    from eval.validity.alt_test import _p_values, difference_p_value

    rng = np.random.default_rng(2)
    runs = [rng.choice([-1.0, 0.0, 1.0], size=n) for n in (30, 47, 31, 90)] + [np.zeros(35), -np.ones(30)]
    bounds = np.r_[0, np.cumsum([len(r) for r in runs])]
    p, constant = _p_values(np.concatenate(runs), bounds, 0.2)
    expected = [difference_p_value(r, 0.2) for r in runs]
    assert p == pytest.approx([e[0] for e in expected], abs=1e-12)
    assert constant.tolist() == [e[1] for e in expected] == [False] * 4 + [True, True]
    assert p[-2:].tolist() == [0.0, 1.0]
    # a one-item run beside them: no degree of freedom, NaN on both paths, not the constant rule's 0
    single = [np.ones(1), *runs[:2]]
    p, constant = _p_values(np.concatenate(single), np.r_[0, np.cumsum([len(r) for r in single])], 0.2)
    expected = [difference_p_value(r, 0.2) for r in single]
    assert p == pytest.approx([e[0] for e in expected], abs=1e-12, nan_ok=True) and np.isnan(p[0])
    assert constant.tolist() == [e[1] for e in expected] == [False] * 3


def test_the_constant_rule_is_the_references_outcome_on_indicator_differences():
    """The reference hands a constant vector to scipy: ``ttest_1samp(W_h - W_f, epsilon, alternative="less")``
    returns t = -inf or +inf and p = 0 or 1. On the only constants indicators make (d = W_f - W_h of -1, 0, 1) the
    stated rule gives the same p-values, at the default epsilon and at another."""
    from scipy.stats import ttest_1samp

    from eval.validity.alt_test import difference_p_value

    for epsilon in (0.2, 0.1):
        for d in (-1.0, 0.0, 1.0):
            with warnings.catch_warnings():  # scipy warns of the zero spread it then handles
                warnings.simplefilter("ignore", RuntimeWarning)
                reference = ttest_1samp(np.full(30, -d), epsilon, alternative="less").pvalue
            assert difference_p_value(np.full(30, d), epsilon) == (reference, True)


def test_an_item_without_a_prediction_is_left_out_not_lost():
    """The five items and a sixth the judge was never asked (``missing``): left out for every expert under ``loss``
    as under ``drop`` — the five-item result, no judge failure counted — while a failure is still a loss."""
    experts = np.vstack([FIVE, [[1, 1, 2]]])
    judge = np.r_[JUDGE, np.nan]
    ids = np.array([["A", "B", "C"]] * 6, dtype=object)
    missing = np.r_[np.zeros(5, dtype=bool), True]
    five = alt_test(JUDGE, FIVE, IDS, FIVE_ITEMS)
    for failures in ("loss", "drop"):
        settings = AltTestSettings(min_items_per_expert=5, failures=failures)
        result = alt_test(judge, experts, ids, settings, missing=missing)
        assert result["experts"] == five["experts"] and result["n_items_judge_failed"] == 0
        assert result["n_items"] == 5 and result["advantage_probability"] == five["advantage_probability"]
    _, _, _, _, counts = indicators(judge, experts, np.ones_like(ids, dtype=bool), FIVE_ITEMS, missing)
    assert counts == {"n_items_few_experts": 0, "n_items_judge_failed": 0}


def test_accuracy_compares_an_out_of_scale_score_as_it_is():
    """Experts 2, 2, 1 (a, b, c) on 40 items of a 0-2 scale, a judge that always says 5, ``accuracy``. Leaving out
    a (or b): its alignment with the other two is mean(2 == 2, 2 == 1) = 1/2, the judge's 0: W_f = 0, W_h = 1, d = -1
    on every item (the constant rule: p = 1, not rejected), advantage 0. Leaving out c: its alignment with (2, 2) is
    0, the judge's 0: a tie, d = 0 > -0.2 (p = 0, rejected), advantage 1. omega = 1/3, rho = 1/3: fails, as the
    authors' notebook (``alt_test_example.ipynb``, public repository ``nitaytech/AltTest``) compares 5 == 2. Clipped
    into the scale the 5 became a 2 that agreed with a and b: omega 1, rho 1, a pass."""
    import dataclasses

    from eval.scoring.item_table import ItemTable
    from eval.validity.section import ValiditySettings, alt_test_judge, validity_section

    n = 40
    experts = np.tile([2.0, 2.0, 1.0], (n, 1))
    ids = np.tile(np.array(["a", "b", "c"], dtype=object), (n, 1))
    low, high = np.zeros(n), np.full(n, 2.0)
    settings = AltTestSettings(scoring="accuracy")
    judge = alt_test_judge(np.full(n, 5.0), low, high, "accuracy")
    result = alt_test(judge, experts, ids, settings)
    assert [(r["expert"], r["advantage_probability"], r["rejected"]) for r in result["experts"]] == [
        ("a", 0.0, False), ("b", 0.0, False), ("c", 1.0, True)]
    assert result["winning_rate"] == pytest.approx(1 / 3) and result["advantage_probability"] == pytest.approx(1 / 3)
    assert result["passed"] is False
    # a score that rounds into the scale is its level; one that rounds out of it stays as it is
    assert alt_test_judge(np.array([2.4, 2.5, -0.4, -0.6, np.nan]), np.zeros(5), np.full(5, 2.0),
                          "accuracy").tolist()[:4] == [2.0, 2.5, 0.0, -0.6]
    # and through the section
    labels = {name: np.full(n, value, dtype=object) for name, value in (
        ("error", ""), ("score_source", "verdict"), ("split", "standard"), ("model_id", "m"), ("task_type", "t"),
        ("task_group", "g"), ("criteria_name", "c"), ("status", "ok"))}  # fmt: skip
    table = ItemTable(ids=np.array([f"i{i}" for i in range(n)], dtype=object), judge=np.full(n, 5.0),
                      experts=experts, expert_ids=ids, scale_low=low, scale_high=high, **labels)
    section = validity_section(table, "mode", {"standard": np.arange(n)},
                               dataclasses.replace(ValiditySettings(n_boot=0, alpha_boot=0), alt_test=settings))
    overall = section.splits["standard"].overall.alt_test
    assert overall.winning_rate == pytest.approx(1 / 3) and overall.passed is False


def test_an_expert_without_any_pair_is_listed_untested():
    """a and b score 40 items together (tested: each ties the judge on every item); z scores 20 more items alone,
    which have too few experts for the test: z has 0 items and is listed as untested, as an expert under the
    minimum is, not left out of both lists. Per domain the same: z's domain has no tested expert (no verdict) and
    lists z. Items without a prediction are as if not in the table: z's items all missing, z is in neither list."""
    experts = np.full((60, 2), np.nan)
    experts[:40] = 1.0
    experts[40:, 0] = 1.0
    ids = np.full((60, 2), None, dtype=object)
    ids[:40] = ["a", "b"]
    ids[40:, 0] = "z"
    judge = np.ones(60)
    result = alt_test(judge, experts, ids)
    assert [r["expert"] for r in result["experts"]] == ["a", "b"]
    assert result["untested"] == [{"expert": "z", "n_items": 0}]
    assert result["n_items_few_experts"] == 20
    domains = np.array(["x"] * 40 + ["y"] * 20, dtype=object)
    family = summarise_by_domain(prepare(judge, experts, ids, AltTestSettings()), AltTestSettings(), domains)
    assert family["by_domain"]["y"]["untested"] == [{"expert": "z", "n_items": 0}]
    assert family["by_domain"]["y"]["passed"] is None and family["by_domain"]["x"]["untested"] == []
    assert (family["n_passed"], family["n_domains"]) == (1, 1)
    missing = np.r_[np.zeros(40, dtype=bool), np.ones(20, dtype=bool)]
    assert alt_test(judge, experts, ids, missing=missing)["untested"] == []


def test_an_expert_with_one_item_is_tested_never_rejected_and_counted_in_the_correction():
    """Under ``--alt-test-min-items 1`` an expert can have one item: the t-test then has no degree of freedom, and the
    reference's ``ttest_1samp`` gives p = NaN, which its Benjamini–Yekutieli step counts in m and never selects. The
    constant rule once gave such an expert p = 0 (a judge tying one item "beat" it).

    The five items (A, B, C; p = .173, .5, .281 from their t, ``test_five_items_by_hand``) and a sixth that only D
    and E scored, 1 and 1, the judge 1: each of D and E has one item, a tie (d = 0, advantage 1), p NaN. Five
    hypotheses at q = 0.9, H_5 = 2.2833: thresholds i/5 * .9 / H_5 = .0788, .1577, .2365 for the three defined
    p-values (.173, .281, .5 in order): none is under its threshold, nothing is rejected, omega = 0/5. Counted as
    three hypotheses (the NaN left out) A and C would be rejected (.281 <= .3273 at i = 2 of 3, with q/H_3 = .4909)
    and omega would be 2/3; with the constant rule D and E at p = 0 made four rejections (omega .8)."""
    experts = np.vstack([np.c_[FIVE, np.full((5, 2), np.nan)], [[np.nan, np.nan, np.nan, 1, 1]]])
    ids = np.array([["A", "B", "C", None, None]] * 5 + [[None, None, None, "D", "E"]], dtype=object)
    settings = AltTestSettings(min_items_per_expert=1, q=0.9)
    result = alt_test(np.r_[JUDGE, 1.0], experts, ids, settings)
    rows = {r["expert"]: r for r in result["experts"]}
    assert sorted(rows) == ["A", "B", "C", "D", "E"] and result["untested"] == []
    for name in ("D", "E"):
        assert rows[name]["n_items"] == 1 and rows[name]["advantage_probability"] == 1.0
        assert math.isnan(rows[name]["p_value"]) and math.isnan(rows[name]["p_adjusted"])
        assert rows[name]["rejected"] is False and rows[name]["constant_difference"] is False
    by_hand = [student_t.sf(1.069045, 4), 0.5, student_t.sf(0.632456, 4)]  # t of each, 4 degrees of freedom
    assert [rows[name]["p_value"] for name in ("A", "B", "C")] == pytest.approx(by_hand, rel=1e-5)
    assert not any(r["rejected"] for r in rows.values()) and result["winning_rate"] == 0.0

    from eval.validity.alt_test import difference_p_value

    p, constant = difference_p_value(np.array([0.0]), 0.2)
    assert math.isnan(p) and constant is False


def test_benjamini_yekutieli_counts_an_undefined_p_value_and_never_rejects_it():
    """BY over (.001, NaN) at q = .05: m = 2, H_2 = 1.5, the adjusted .001 is 2 * 1.5 * .001 / 1 = .003 (it would
    be .001 with the NaN left out), rejected; the NaN stays NaN, not rejected (scipy refuses NaN outright)."""
    adjusted, rejected = by_rejected(np.array([0.001, np.nan]), 0.05)
    assert adjusted[0] == pytest.approx(0.003) and math.isnan(adjusted[1])
    assert rejected.tolist() == [True, False]


def test_an_undefined_p_value_reads_as_a_dash_before_and_after_metrics_json():
    """The one-item expert's NaN p-value is null in metrics.json, which the reports render as "—"; a result rendered
    before that round trip (a library caller's) reads the same, not "nan"."""
    from eval.validity.render import _alt_rows
    from judge.metrics_json.validity import AltTest

    experts = np.vstack([np.c_[FIVE, np.full((5, 2), np.nan)], [[np.nan, np.nan, np.nan, 1, 1]]])
    ids = np.array([["A", "B", "C", None, None]] * 5 + [[None, None, None, "D", "E"]], dtype=object)
    result = alt_test(np.r_[JUDGE, 1.0], experts, ids, AltTestSettings(min_items_per_expert=1, q=0.9))
    in_memory = _alt_rows(AltTest.from_json(result), str)
    written = _alt_rows(AltTest.from_json(json.loads(json.dumps(result).replace("NaN", "null"))), str)
    assert in_memory == written
    assert [row[3:] for row in in_memory if row[0] in ("D", "E")] == [["—", "—", "no"]] * 2
