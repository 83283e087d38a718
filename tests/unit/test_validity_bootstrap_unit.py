"""The validity section's intervals under ``--bootstrap-unit instruction``: the ceiling gap's, the alpha difference's
and ``compare``'s paired ones draw whole instructions, as a plain loop over whole clusters does (within Monte-Carlo
error), and are wider than the item bootstrap's on a judge that errs by instruction."""

from __future__ import annotations

import numpy as np
import pytest

from eval.scoring.metrics import expert_mode
from eval.validity.agreement import agreement
from eval.validity.ceiling import ceiling
from eval.validity.paired import paired_validity
from eval.validity.alt_test import AltTestSettings
from tests.unit.test_eval_bootstrap import LEVEL, assert_same_interval

B = 1000  # resamples of the engine and of the loop alike (the tolerance is read off the loop's count)
DOMAIN = np.array([0.0, 1.0, 2.0])
TAIL = (1 - LEVEL) / 2


def panel(n_clusters: int, size: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(judge, experts, clusters): three experts per item on a 0-2 scale, mostly agreeing with a per-item truth; the
    judge copies the truth except on a third of the instructions, where it is off by one on every item."""
    rng = np.random.default_rng(seed)
    truth = rng.choice(DOMAIN, size=(n_clusters, size), p=[0.2, 0.3, 0.5])
    experts = np.repeat(truth[..., None], 3, axis=2)
    flip = rng.random(experts.shape) < 0.2
    experts = np.where(flip, np.clip(experts + rng.choice([-1.0, 1.0], size=experts.shape), 0, 2), experts)
    wrong = rng.random(n_clusters) < 1 / 3
    judge = np.where(wrong[:, None], np.where(truth == 2.0, 1.0, truth + 1.0), truth)
    return judge.ravel(), experts.reshape(-1, 3), np.repeat(np.arange(n_clusters), size)


def loop(clusters: np.ndarray, statistic, seed: int) -> np.ndarray:
    """The cluster bootstrap as a plain loop: draw the clusters with replacement, keep all their items, and compute
    the statistic on the resampled table from scratch."""
    rng = np.random.default_rng(seed)
    members = [np.flatnonzero(clusters == c) for c in np.unique(clusters)]
    out = np.empty(B)
    for b in range(B):
        out[b] = statistic(np.concatenate([members[c] for c in rng.integers(0, len(members), len(members))]))
    return out


def test_the_ceiling_gap_interval_resamples_whole_instructions():
    judge, experts, clusters = panel(50, 4, seed=1)
    by_cluster = ceiling(judge, experts, "mode", DOMAIN, n_boot=B, rng=np.random.default_rng(2), clusters=clusters)
    by_item = ceiling(judge, experts, "mode", DOMAIN, n_boot=B, rng=np.random.default_rng(2))
    assert by_cluster["gap"] == by_item["gap"]  # the point estimate does not depend on the unit
    reference = loop(clusters, lambda items: ceiling(judge[items], experts[items], "mode", DOMAIN, n_boot=0)["gap"],
                     seed=3)
    assert_same_interval(by_cluster["gap_ci"], list(np.quantile(reference, [TAIL, 1 - TAIL])), reference)
    width = by_cluster["gap_ci"][1] - by_cluster["gap_ci"][0]
    assert width > 1.4 * (by_item["gap_ci"][1] - by_item["gap_ci"][0])


def test_the_alpha_difference_interval_resamples_whole_instructions():
    """A full cluster bootstrap (no m-out-of-n: the resample's counts are weights, not items drawn one by one), each
    resample's alphas as the ``krippendorff`` package gives them on the resampled items (``agreement`` without
    resamples, which the agreement tests pin to the package)."""
    judge, experts, clusters = panel(40, 5, seed=4)
    mode, unique = expert_mode(experts)
    mode = np.where(unique, mode, np.nan)
    out = agreement(judge, experts, mode, DOMAIN, n_boot=B, rng=np.random.default_rng(5), clusters=clusters)
    assert out["alpha_boot"] == {"resamples": B, "items_per_resample": 200, "clusters_per_resample": 40,
                                 "n_resamples": B}
    reference = loop(clusters, lambda items: agreement(judge[items], experts[items], mode[items], DOMAIN,
                                                      n_boot=0)["alpha_difference"], seed=6)
    assert_same_interval(out["alpha_difference_ci"], list(np.quantile(reference, [TAIL, 1 - TAIL])), reference)
    assert out["alpha_difference"] == agreement(judge, experts, mode, DOMAIN, n_boot=0)["alpha_difference"]


def test_one_instruction_gets_no_interval():
    """One cluster redrawn is always the same items: no interval (and so no ceiling verdict), not a zero-width one."""
    judge, experts, _ = panel(1, 30, seed=7)
    one = np.zeros(len(judge), dtype=np.int64)
    result = ceiling(judge, experts, "mode", DOMAIN, n_boot=200, rng=np.random.default_rng(8), clusters=one)
    assert result["gap"] is not None and result["gap_ci"] == [None, None] and result["verdict"] is None
    mode = expert_mode(experts)[0]
    alpha = agreement(judge, experts, mode, DOMAIN, n_boot=200, rng=np.random.default_rng(9), clusters=one)
    assert alpha["alpha_difference"] is not None and alpha["alpha_difference_ci"] == [None, None]
    assert alpha["alpha_boot"]["clusters_per_resample"] == 1


def test_compares_paired_ceiling_gap_resamples_whole_instructions():
    judge_a, experts, clusters = panel(60, 4, seed=10)
    fixed = np.repeat(np.random.default_rng(11).random(60) < 0.4, 4)  # B corrects A on whole instructions
    judge_b = np.where(fixed, np.round(np.median(experts, axis=1)), judge_a)
    settings = AltTestSettings()
    by_cluster = paired_validity(judge_a, judge_b, experts, None, "mode", settings, n_boot=B,
                                 rng=np.random.default_rng(12), clusters=clusters)
    by_item = paired_validity(judge_a, judge_b, experts, None, "mode", settings, n_boot=B,
                              rng=np.random.default_rng(12))
    delta = by_cluster["ceiling_gap"]["delta"]
    assert delta == pytest.approx(by_item["ceiling_gap"]["delta"])

    def paired_delta(items):
        return paired_validity(judge_a[items], judge_b[items], experts[items], None, "mode", settings,
                               n_boot=0)["ceiling_gap"]["delta"]

    reference = loop(clusters, paired_delta, seed=13)
    assert_same_interval(by_cluster["ceiling_gap"]["ci"], list(np.quantile(reference, [TAIL, 1 - TAIL])), reference)
    width = by_cluster["ceiling_gap"]["ci"][1] - by_cluster["ceiling_gap"]["ci"][0]
    assert width > 1.4 * (by_item["ceiling_gap"]["ci"][1] - by_item["ceiling_gap"]["ci"][0])


def test_the_analytic_intervals_cluster_by_answer_or_by_instruction():
    """The leniency interval, the marginal homogeneity test and the length slope are clustered by answer under the
    item unit (an answer: its model, task type, length and instruction) and by instruction under the instruction
    unit (each of the 50 instructions here holds two models' answers, each scored on two criteria)."""
    from eval.scoring.item_table import ItemTable
    from eval.validity.bias import leniency, length_bias, marginal_homogeneity
    from eval.validity.section import ValiditySettings, judge_levels, validity_section

    judge, experts, instruction = panel(50, 4, seed=10)
    n = len(judge)
    model = np.tile(np.array(["m1", "m1", "m2", "m2"], dtype=object), 50)
    answer = instruction * 2 + (model == "m2")
    chars = 100.0 + 7 * answer  # one length per answer
    criterion = np.tile(np.array(["c1", "c2"], dtype=object), 2 * 50)
    labels = {name: np.full(n, value, dtype=object) for name, value in (
        ("error", ""), ("score_source", "verdict"), ("split", "standard"), ("task_type", "t"), ("task_group", "g"),
        ("status", "ok"))}  # fmt: skip
    ids = np.array([["a", "b", "c"]] * n, dtype=object)
    table = ItemTable(ids=np.array([f"i{i}" for i in range(n)], dtype=object), judge=judge, experts=experts,
                      expert_ids=ids, model_id=model, criteria_name=criterion, scale_low=np.zeros(n),
                      scale_high=np.full(n, 2.0), answer_chars=chars, instruction_key=instruction, **labels)
    mean, mode = experts.mean(axis=1), expert_mode(experts)
    mode = np.where(mode[1], mode[0], np.nan)
    levels = judge_levels(judge, np.zeros(n), np.full(n, 2.0))
    for unit, clusters in (("item", answer), ("instruction", instruction)):
        settings = ValiditySettings(n_boot=0, alpha_boot=0, bootstrap_unit=unit)
        overall = validity_section(table, "mode", {"standard": np.arange(n)}, settings).splits["standard"].overall
        assert overall.leniency.ci == pytest.approx(leniency(judge, mean, None, clusters=clusters)["ci"], abs=1e-12)
        expected = marginal_homogeneity(levels, mode, DOMAIN, clusters)
        assert overall.marginal_homogeneity.statistic == pytest.approx(expected["statistic"], abs=1e-12)
        slope = length_bias(judge, experts, ids, chars, None, answers=clusters)["judge"]
        assert overall.length_bias.judge.ci == pytest.approx(slope["ci"], abs=1e-12)
    # the two units give two intervals (the section follows the unit, not one of them always)
    by_answer, by_instruction = (leniency(judge, mean, None, clusters=c)["ci"] for c in (answer, instruction))
    assert by_answer != pytest.approx(by_instruction, abs=1e-6)


def test_the_ceiling_minimum_counts_instructions_under_the_instruction_unit():
    """30 items in 2 instructions of 15: every item's panel is (1, 1, 1), so every pair's reference is 1. A judge
    that says 1 everywhere has gap 0 on every item; one that says 2 has gap 1 on every item: every cluster resample
    gives that same gap, a zero-width interval [0, 0] (or [1, 1]) that would read "inside" (or "outside") from two
    instructions. The minimum counts the units resampled (``ceiling.MIN_ITEMS`` = 30, here 2 instructions):
    "inconclusive" either way. Resampled by item, the same 30 items meet the minimum and keep their verdicts."""
    from eval.validity.ceiling import MIN_ITEMS

    experts = np.ones((30, 3))
    clusters = np.repeat([0, 1], 15)
    assert MIN_ITEMS == 30
    for judge, gap, by_item in ((np.ones(30), 0.0, "inside"), (np.full(30, 2.0), 1.0, "outside")):
        result = ceiling(judge, experts, "mode", DOMAIN, n_boot=200, rng=np.random.default_rng(0), clusters=clusters)
        assert (result["n_items"], result["gap"], result["gap_ci"]) == (30, gap, [gap, gap])
        assert result["verdict"] == "inconclusive"
        assert ceiling(judge, experts, "mode", DOMAIN, n_boot=200, rng=np.random.default_rng(0))["verdict"] == by_item


def test_paired_rho_of_a_resample_averages_the_experts_it_draws():
    """Expert e0 has items 0 and 1 (W_f 1, 0), e1 items 2 and 3 (W_f 1, 1). A resample that draws only e0's item 0
    reads e0's share 1 and nothing of e1: rho 1 (it was NaN, and the resample dropped); only e1's items: 1; every
    item once: (1/2 + 1) / 2 = 0.75; item 1 twice: 0; no item of either: NaN, unusable."""
    from eval.validity.paired import _rho

    parts = (np.array([0, 1, 2, 3]), np.array([1.0, 0.0, 1.0, 1.0]), np.array([0, 2]), None)
    weights = np.array([[2, 0, 0, 0], [0, 0, 1, 1], [1, 1, 1, 1], [0, 2, 0, 0], [0, 0, 0, 0]], dtype=float)
    np.testing.assert_array_equal(_rho(parts, weights), [1.0, 1.0, 0.75, 0.0, np.nan])


def _nested_panel():
    """Four instructions of 40 items, two named experts each, nested in their instruction (e0, e1 in the first, ...)
    on a 0-2 scale; judge A off by up to one level at random, judge B the truth."""
    rng = np.random.default_rng(0)
    n_instructions, size = 4, 40
    n = n_instructions * size
    truth = rng.integers(0, 3, n).astype(float)
    experts, ids = np.full((n, 2), np.nan), np.full((n, 2), None, dtype=object)
    for g in range(n_instructions):
        rows = slice(g * size, (g + 1) * size)
        for slot in range(2):
            experts[rows, slot] = np.clip(truth[rows] + rng.integers(-1, 2, size), 0, 2)
            ids[rows, slot] = f"e{2 * g + slot}"
    judge_a = np.clip(truth + rng.integers(-1, 2, n), 0, 2).astype(float)
    return judge_a, truth, experts, ids, np.repeat(np.arange(n_instructions), size)


def test_paired_rho_interval_under_the_instruction_unit_uses_every_resample():
    """A resample of 4 instructions misses at least one with chance 1 - 4!/4^4 = 29/32, and with it that
    instruction's two experts: their NaN made the whole resample's rho NaN, and the interval was read off the
    redraws of all four, whose rho is rho itself (ci [delta, delta], zero width). Every resample draws some expert,
    so all 200 are usable and the interval has a width around delta."""
    judge_a, judge_b, experts, ids, clusters = _nested_panel()
    out = paired_validity(judge_a, judge_b, experts, ids, "mean", AltTestSettings(), n_boot=200, clusters=clusters,
                          rng=np.random.default_rng(0), scale_low=np.zeros(len(judge_a)),
                          scale_high=np.full(len(judge_a), 2.0), ceiling_failures="worst")
    rho = out["rho"]
    assert rho["n_resamples"] == 200
    assert rho["ci"][0] < rho["delta"] < rho["ci"][1]


def test_paired_interval_needs_most_resamples_usable():
    """The tested experts' items all lie in instruction 0 of 2; instruction 1's items have no expert. A resample of 2
    instructions draws instruction 1 twice with chance 1/4: no tested expert's item (no rho) and no ceiling pair (no
    gap). About 150 of 200 resamples are usable, under MIN_USABLE_SHARE (0.9): no interval rather than one read off
    the resamples that happened to draw instruction 0, and the count says how many were."""
    from eval.validity.paired import MIN_USABLE_SHARE

    judge_a, judge_b, experts, ids, clusters = _nested_panel()
    keep = clusters < 2
    judge_a, judge_b, experts, ids, clusters = judge_a[keep], judge_b[keep], experts[keep], ids[keep], clusters[keep]
    experts[clusters == 1], ids[clusters == 1] = np.nan, None
    out = paired_validity(judge_a, judge_b, experts, ids, "mean", AltTestSettings(), n_boot=200, clusters=clusters,
                          rng=np.random.default_rng(0), ceiling_failures="worst")
    for figure in (out["rho"], out["ceiling_gap"]):
        assert figure["ci"] == [None, None]
        assert 0 < figure["n_resamples"] < MIN_USABLE_SHARE * 200
