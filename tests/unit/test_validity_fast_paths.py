"""The validity section computes every cell from per-table precomputations (coded value counts, the ceiling's pairs,
the leniency intervals of every cell); each is pinned here to the library or to the per-cell definition it stands in
for."""

from __future__ import annotations

import krippendorff
import numpy as np
import pytest
from scipy.stats import ttest_1samp
from sklearn.metrics import cohen_kappa_score

from eval.scoring.item_table import label_groups
from eval.validity.agreement import CodedCounts, agreement, level_positions, quadratic_kappa, value_counts
from eval.validity.alt_test import AltTestSettings, prepare, stable_order, summarise, summarise_by_domain
from eval.validity.bias import leniencies, leniency
from eval.validity.ceiling import leave_one_out_reference


def _panel(rng: np.random.Generator, n: int, k: int = 5, top: int = 4) -> np.ndarray:
    experts = rng.integers(0, top + 1, size=(n, k)).astype(float)
    experts[rng.random((n, k)) < 0.35] = np.nan
    return experts


def assert_package_alphas(coded: CodedCounts, experts: np.ndarray, drawn: np.ndarray, domain: np.ndarray) -> None:
    """``coded``'s alpha over ``domain`` of each resample of ``drawn`` is the package's on the same items."""
    got = coded.alphas(coded.draws(drawn), domain)
    assert len(got) == len(drawn)  # one alpha per resample: zip alone would pass a short answer
    for row, items in zip(got, drawn):
        counts = value_counts(experts[items], domain)
        expected = krippendorff.alpha(value_counts=counts[counts.sum(axis=1) >= 2], value_domain=list(domain),
                                      level_of_measurement="ordinal")
        assert row == pytest.approx(expected, abs=1e-12)


def test_coded_alphas_equal_the_krippendorff_package():
    """Coincidences summed per distinct row give the package's ordinal alpha: per resample, on a domain that is a
    subset of the coded values (an expert's value outside it is left out, as value_counts over the domain does), and
    NaN where no item is rated twice."""
    rng = np.random.default_rng(7)
    experts = _panel(rng, 400)
    values = np.arange(6.0)  # a level nobody uses (5) and a cell domain without 4
    coded = CodedCounts(value_counts(experts, values), values)
    drawn = rng.integers(0, 400, size=(12, 150))
    for domain in (values, np.arange(4.0)):
        assert_package_alphas(coded, experts, drawn, domain)
    lonely = np.full((3, 5), np.nan)
    lonely[:, 0] = [0, 1, 2]
    single = CodedCounts(value_counts(lonely, values), values)
    assert np.isnan(single.alphas(single.draws(np.arange(3)), values)).all()
    # fractional counts (not codable as one integer per row) take the row-wise unique: the same alpha
    counts = value_counts(experts, values) * 1.5
    weighted = CodedCounts(counts, values)
    expected = krippendorff.alpha(value_counts=counts, value_domain=list(values), level_of_measurement="ordinal")
    assert weighted.alphas(weighted.draws(np.arange(400)), values)[0] == pytest.approx(expected, abs=1e-12)


def test_leave_one_out_mode_equals_the_pairwise_definition():
    """The mode of each slot's other experts, by brute force over every item and slot."""
    rng = np.random.default_rng(3)
    experts = _panel(rng, 300, k=6, top=3)
    got = leave_one_out_reference(experts, "mode")
    for i in range(len(experts)):
        for j in range(experts.shape[1]):
            others = [v for s, v in enumerate(experts[i]) if s != j and not np.isnan(v)]
            expected = np.nan
            if not np.isnan(experts[i, j]) and others:
                values, counts = np.unique(others, return_counts=True)
                if (counts == counts.max()).sum() == 1:
                    expected = values[counts.argmax()]
            assert got[i, j] == expected or (np.isnan(got[i, j]) and np.isnan(expected)), (i, j)


def test_level_positions_by_subtraction_and_by_search_agree():
    values = np.array([0.0, 1.0, 2.0, 3.0, 2.5, -1.0, np.nan, 4.0])
    for domain in (np.arange(4.0), np.array([0.0, 1.0, 2.5, 4.0])):
        position, inside = level_positions(values, domain)
        expected_inside = np.isin(values, domain)
        np.testing.assert_array_equal(inside, expected_inside)
        np.testing.assert_array_equal(domain[position[inside]], values[inside])
    # kappa through the positions: sklearn's with the full scale as labels
    rng = np.random.default_rng(1)
    a, b = rng.integers(0, 5, 200).astype(float), rng.integers(0, 3, 200).astype(float)
    assert quadratic_kappa(a, b, np.arange(5.0)) == pytest.approx(
        cohen_kappa_score(a, b, weights="quadratic", labels=[0, 1, 2, 3, 4]))


def test_batched_leniency_intervals_equal_one_call_per_cell_and_the_libraries():
    """All cells at once: each cell's interval as its own ``leniency`` call; without clusters the one-sample t
    interval of scipy's ``ttest_1samp``, with clusters statsmodels' cluster-robust interval of the mean
    (``OLS(error, ones).fit(cov_type="cluster", use_t=True)``)."""
    from statsmodels.regression.linear_model import OLS

    rng = np.random.default_rng(5)
    n = 5000
    judge = rng.integers(0, 5, n).astype(float)
    judge[rng.random(n) < 0.05] = np.nan
    mean = rng.random(n) * 4
    best_low = rng.random(n) < 0.2
    answers = np.sort(rng.integers(0, 900, n))  # an answer's rows side by side, 1 to ~15 of them
    cells = [np.sort(rng.choice(n, size, replace=False)) for size in (2, 3, 40, 41, 90, 700, 1500, 5000)]
    cells.append(np.array([0]))
    for clusters in (None, answers):
        batched = leniencies(judge, mean, best_low, cells, clusters=clusters)
        assert len(batched) == len(cells)  # the one-item cell last: zip alone would pass it left out
        for index, got in zip(cells, batched):
            assert got == leniency(judge[index], mean[index], best_low[index],
                                   clusters=None if clusters is None else clusters[index])
            error = ((judge - mean) * np.where(best_low, -1.0, 1.0))[index]
            kept = np.isfinite(error)
            error = error[kept]
            if clusters is None and len(error) >= 2:
                interval = ttest_1samp(error, 0.0).confidence_interval(0.95)
                assert got["ci"] == pytest.approx([float(interval.low), float(interval.high)], abs=1e-12)
            elif clusters is not None and len(np.unique(clusters[index][kept])) >= 2:
                fit = OLS(error, np.ones(len(error))).fit(cov_type="cluster",
                                                          cov_kwds={"groups": clusters[index][kept]}, use_t=True)
                assert got["ci"] == pytest.approx(fit.conf_int(0.05)[0].tolist(), abs=1e-12)
            else:  # one error, or one answer: no interval
                assert got["ci"] == [None, None]


def test_alt_test_with_numbered_ids_equals_the_ids_themselves():
    """The section numbers the ids once for the table; the pairs' experts are renumbered in first-appearance order,
    so every figure and every row's order is what the ids themselves give."""
    rng = np.random.default_rng(11)
    n = 900
    experts = _panel(rng, n, k=4)
    pool = np.array([f"e{i}" for i in range(7)], dtype=object)
    ids = np.where(np.isnan(experts), None, pool[(rng.integers(0, 7, n)[:, None] + np.arange(4)) % 7])
    ids[5, 0] = None  # a score without a name
    judge = rng.integers(0, 5, n).astype(float)
    settings = AltTestSettings(min_items_per_expert=10)
    import pandas as pd

    flat_codes, names = pd.factorize(ids.ravel())
    codes = (flat_codes.reshape(ids.shape), np.asarray(names, dtype=object))
    plain, numbered = prepare(judge, experts, ids, settings), prepare(judge, experts, ids, settings, codes)
    np.testing.assert_array_equal(plain.expert, numbered.expert)
    np.testing.assert_array_equal(plain.expert_names, numbered.expert_names)
    domains = rng.choice(np.array(["a", "b", "c"], dtype=object), n)
    mask = rng.random(n) < 0.7
    assert summarise(plain, settings, mask) == summarise(numbered, settings, mask)
    assert (summarise_by_domain(plain, settings, domains, mask)
            == summarise_by_domain(numbered, settings, pd.factorize(domains), mask))


def test_stable_order_and_groups_as_before():
    rng = np.random.default_rng(2)
    codes = rng.integers(0, 3000, 10000)
    np.testing.assert_array_equal(stable_order(codes), np.argsort(codes, kind="stable"))
    big = codes * 100
    np.testing.assert_array_equal(stable_order(big), np.argsort(big, kind="stable"))
    # labels grouped by their text, in sorted order; None and NaN by theirs
    labels = np.array(["b", None, "a", "b", 1, "1", "", "None", float("nan"), None], dtype=object)
    groups = label_groups(labels)
    assert list(groups) == ["", "1", "None", "a", "b", "nan"]
    assert [g.tolist() for g in groups.values()] == [[6], [4, 5], [1, 7, 9], [2], [0, 3], [8]]
    assert label_groups(np.array([], dtype=object)) == {}


def test_agreement_with_table_codes_equals_its_own_counts():
    """A cell of a table coded once (over more values than its domain) gives the figures of its own counts."""
    rng = np.random.default_rng(4)
    experts = _panel(rng, 600, top=3)
    judge = rng.integers(0, 4, 600).astype(float)
    mode = np.where(rng.random(600) < 0.7, experts[:, 0], np.nan)  # NaN where the first slot is empty too
    values = np.arange(5.0)
    coded = (CodedCounts(value_counts(experts, values), values),
             CodedCounts(value_counts(experts, values) + value_counts(judge[:, None], values), values))
    cell = np.sort(rng.choice(600, 250, replace=False))
    domain = np.arange(4.0)
    own = agreement(judge[cell], experts[cell], mode[cell], domain, n_boot=30, rng=np.random.default_rng(9))
    shared = agreement(judge[cell], experts[cell], mode[cell], domain, n_boot=30, rng=np.random.default_rng(9),
                       coded=(*coded, cell))
    _assert_close(own, shared)


def _assert_close(a, b):
    if isinstance(a, dict):
        assert list(a) == list(b)
        for key in a:
            _assert_close(a[key], b[key])
    elif isinstance(a, list):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _assert_close(x, y)
    elif isinstance(a, float):
        assert a == pytest.approx(b, abs=1e-12)
    else:
        assert a == b


def test_section_on_an_empty_table():
    """No items at all: every figure reads "none", nothing raises (the coded counts have no rows)."""
    from eval.scoring.item_table import ItemTable
    from eval.validity.section import validity_section

    empty = np.zeros(0, dtype=object)
    table = ItemTable(ids=empty, judge=np.zeros(0), status=empty, error=empty, score_source=empty,
                      experts=np.zeros((0, 3)), split=empty, model_id=empty, task_type=empty, task_group=empty,
                      criteria_name=empty)
    section = validity_section(table, "mode", {"all": np.zeros(0, dtype=np.intp)})
    overall = section.splits["all"].overall
    assert overall.n_items == 0 and overall.alpha_experts is None and overall.ceiling.verdict is None


def test_accuracy_scoring_compares_a_regression_judge_by_the_level_its_score_rounds_to():
    """``--alt-test-scoring accuracy`` compares labels: a regression head that scores 2.1 where three experts
    agree on 2 has the experts' label on every item. Each left-out expert and the judge then tie on all 40 items,
    d = W_f - W_h = 0 against -epsilon: every expert is rejected (omega 1, rho 1). Compared raw, 2.1 would equal no
    expert and the judge would lose every item (omega 0)."""
    from eval.scoring.item_table import ItemTable
    from eval.validity.section import ValiditySettings, validity_section

    n = 40
    consensus = np.arange(n, dtype=float) % 3
    labels = np.full(n, "x", dtype=object)
    table = ItemTable(ids=np.array([f"i{i}" for i in range(n)], dtype=object), judge=consensus + 0.1,
                      status=np.full(n, "ok", dtype=object), error=np.full(n, "", dtype=object),
                      score_source=np.full(n, "regression_head", dtype=object),
                      experts=np.repeat(consensus[:, None], 3, axis=1), split=np.full(n, "standard", dtype=object),
                      model_id=labels, task_type=labels, task_group=labels, criteria_name=labels,
                      expert_ids=np.tile(np.array(["a", "b", "c"], dtype=object), (n, 1)),
                      scale_low=np.zeros(n), scale_high=np.full(n, 2.0))
    settings = ValiditySettings(alt_test=AltTestSettings(scoring="accuracy"), n_boot=0, alpha_boot=0)
    alt = validity_section(table, "mode", {"all": np.arange(n)}, settings).splits["all"].overall.alt_test
    assert (alt.n_experts_tested, alt.winning_rate, alt.advantage_probability, alt.passed) == (3, 1.0, 1.0, True)
