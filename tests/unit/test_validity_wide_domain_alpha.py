"""A cell pooling criteria whose scales lie far apart has a value domain of all their levels together; its alphas
are computed without a levels x levels coincidence table per distinct row of value counts (``CodedCounts``' midrank
form past ``DENSE_LEVELS``), equal to the package's, so the section's memory grows with the levels, not their
square."""

from __future__ import annotations

import dataclasses

import krippendorff
import numpy as np
import pytest

from eval.validity import agreement as agreement_module
from eval.validity.agreement import DENSE_LEVELS, CodedCounts, value_counts
from tests.unit.test_validity_fast_paths import assert_package_alphas


def _far_apart(n_criteria: int, per: int = 40):
    """``n_criteria`` criteria with no readable scale, experts at 1000 c or 1000 c + 100 and the judge between."""
    from tests.unit.test_eval_confusion import _table

    judge, experts, criteria = [], [], []
    for c in range(n_criteria):
        for k in range(per):
            base = 1000.0 * c
            experts.append([base] * 3 if k % 2 else [base + 100] * 3)
            judge.append(base + 1 + (k * 7) % 99)
            criteria.append(f"C{c}")
    table = _table(judge, ["ok"] * len(judge), experts)
    return dataclasses.replace(table, criteria_name=np.array(criteria, dtype=object))


def test_alphas_past_the_dense_bound_equal_the_krippendorff_package():
    """On a domain of more than ``DENSE_LEVELS`` levels, some unused and some outside it, with ties and items rated
    once: each resample's alpha is the package's, and NaN where no item is rated twice."""
    rng = np.random.default_rng(11)
    values = np.arange(300.0)
    experts = rng.choice(np.array([0.0, 1.0, 2.0, 150.0, 151.0, 299.0]), size=(300, 4))
    experts[rng.random(experts.shape) < 0.3] = np.nan
    coded = CodedCounts(value_counts(experts, values), values)
    drawn = rng.integers(0, 300, size=(8, 120))
    for domain in (values, values[:250]):
        assert len(domain) > DENSE_LEVELS
        assert_package_alphas(coded, experts, drawn, domain)
    lonely = np.full((3, 2), np.nan)
    lonely[:, 0] = [0, 1, 2]
    single = CodedCounts(value_counts(lonely, values), values)
    assert np.isnan(single.alphas(single.draws(np.arange(3)), values)).all()
    counts = value_counts(experts, values) * 1.5  # weighted counts: a row of one value coincides with itself too
    weighted = CodedCounts(counts, values)
    expected = krippendorff.alpha(value_counts=counts, value_domain=list(values), level_of_measurement="ordinal")
    assert weighted.alphas(weighted.draws(np.arange(300)), values)[0] == pytest.approx(expected, abs=1e-12)
    agreeing = CodedCounts(value_counts(np.full((4, 3), 7.0), values), values)  # one level: nothing to expect
    assert np.isnan(agreeing.alphas(agreeing.draws(np.arange(4)), values)).all()


@pytest.mark.parametrize("counts", [[[0.0, 3.2991], [0.0998, 0.0]], [[0.75, 0.75], [1.5, 0.0]]],
                         ids=["a row of weight under one", "a row of weight one and a half"])
def test_weighted_rows_the_package_pairs_are_paired_by_both_forms(monkeypatch, counts):
    """The package pairs a row whose counts sum past 1 (its ``m > 1``), and a row of weight under one makes a margin
    no level of the other rows shares: both forms give the package's alpha, not NaN."""
    from eval.validity import agreement as agreement_module

    counts, domain = np.array(counts), np.array([0.0, 1.0])
    expected = krippendorff.alpha(value_counts=counts, value_domain=list(domain), level_of_measurement="ordinal")
    for bound in (10**6, 1):  # the dense form, then the midrank form
        monkeypatch.setattr(agreement_module, "DENSE_LEVELS", bound)
        coded = CodedCounts(counts, domain)
        assert coded.alphas(coded.draws(np.arange(2)[None]), domain)[0] == pytest.approx(expected, abs=1e-12)


def test_far_apart_criteria_build_no_coincidence_table_over_a_domain_past_the_dense_bound(monkeypatch):
    """30 criteria 1,000 apart (1,200 items, a pooled domain of ~3,000 levels): the section never asks for the
    levels x levels coincidences of a domain past ``DENSE_LEVELS`` (a (rows, levels^2) array), and its
    overall alphas are still computed: the experts of every item agree (1), the judge between them does not."""
    from eval.validity.section import ValiditySettings, validity_section

    asked: list[int] = []
    dense = CodedCounts._coincidences

    def bounded(self, domain):
        asked.append(len(domain))
        if len(domain) > DENSE_LEVELS:
            raise AssertionError(f"a coincidence table over {len(domain)} levels")
        return dense(self, domain)

    monkeypatch.setattr(CodedCounts, "_coincidences", bounded)
    table = _far_apart(30)
    section = validity_section(table, "mode", {"all": np.arange(len(table))}, ValiditySettings(n_boot=0))
    overall = section.splits["all"].overall
    assert len(overall.agreement.value_domain) > 10 * DENSE_LEVELS  # the pooled domain: far past the bound
    assert overall.agreement.alpha_experts == pytest.approx(1.0)
    assert overall.agreement.alpha_with_judge is not None and overall.agreement.alpha_with_judge < 1.0
    assert overall.agreement.alpha_boot.n_resamples  # the bootstrap ran on the midrank form too
    assert asked and max(asked) <= DENSE_LEVELS  # the criteria's own cells still take the dense tables


def test_the_midrank_form_gives_the_dense_forms_alphas_on_the_sections_data(monkeypatch):
    """The same table's alphas, bootstrap included, with every domain on the dense form and every one on the midrank
    form: equal to rounding."""
    from eval.validity.section import ValiditySettings, validity_section

    table = _far_apart(3)  # a pooled domain of ~300 levels: small enough for the dense form
    settings = ValiditySettings(n_boot=0)

    def figures():
        a = validity_section(table, "mode", {"all": np.arange(len(table))}, settings).splits["all"]
        cells = [a.overall, *a.by_criterion.values()]
        return [(c.agreement.alpha_experts, c.agreement.alpha_with_judge, c.agreement.alpha_difference_ci)
                for c in cells]

    monkeypatch.setattr(agreement_module, "DENSE_LEVELS", 10**6)
    dense = figures()
    monkeypatch.setattr(agreement_module, "DENSE_LEVELS", 1)
    midrank = figures()
    assert len(dense) == 4 and None not in dense[0][2]  # the pooled cell's interval, past the dense bound, compared
    # a criterion's cell draws no alpha resample (overall cells only, docs/validity.md): no interval, and the file
    # counts the resamples drawn, 0, as the reason
    criteria = validity_section(table, "mode", {"all": np.arange(len(table))}, settings).splits["all"].by_criterion
    assert all(c.agreement.alpha_difference_ci == [None, None] and c.agreement.alpha_boot.resamples == 0
               and c.agreement.alpha_difference is not None for c in criteria.values())
    for (e1, w1, ci1), (e2, w2, ci2) in zip(dense, midrank):
        assert e2 == pytest.approx(e1, abs=1e-12) and w2 == pytest.approx(w1, abs=1e-12)
        assert ci2 == pytest.approx(ci1, abs=1e-9)


def test_the_coincidences_kept_per_criterion_hold_only_that_criterions_rows(monkeypatch):
    """Each criterion's cell has a domain of its own levels; the coincidences kept for it hold the distinct rows that
    pair there, so that over every criterion's domain the tables kept add up to at most the table's distinct rows
    (over every row, they grew with the criteria times the rows)."""
    from eval.validity.section import ValiditySettings, validity_section

    kept: dict[tuple[int, bytes], tuple[int, int]] = {}
    dense = CodedCounts._coincidences

    def recorded(self, domain):
        result = dense(self, domain)
        kept[id(self), np.asarray(domain, dtype=float).tobytes()] = (result[-1].shape[0], len(self.rows))
        return result

    monkeypatch.setattr(CodedCounts, "_coincidences", recorded)
    monkeypatch.setattr(agreement_module, "DENSE_LEVELS", 10**6)  # every domain on the dense form, the pooled too
    table = _far_apart(6)
    validity_section(table, "mode", {"all": np.arange(len(table))}, ValiditySettings(n_boot=0, alpha_boot=0))
    per_coding: dict[int, list[tuple[int, int]]] = {}
    for (coding, _), shape in kept.items():
        per_coding.setdefault(coding, []).append(shape)
    assert len(per_coding) == 2  # the experts' counts and the experts' plus the judge's
    for shapes in per_coding.values():
        assert len(shapes) >= 7  # the six criteria's domains and the pooled one
        distinct = shapes[0][1]
        # the pooled domain holds every row once, each criterion's its own: twice the rows at most
        assert sum(rows for rows, _ in shapes) <= 2 * distinct
