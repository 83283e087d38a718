"""The validity figures' floors: no ceiling verdict from too few resamples (the floor defined once, in
``eval.scoring.resample_rules``, and why it is one resample above rank's), the paired ceiling gap's and rho's units
counted and marked under the minimum (in compare's paired table, named as the comparison's bootstrap unit), the
paired gap's failures counted as the section counts them by default, compare naming the validity settings two runs
were computed with apart (the ceiling margin among them), and the alt-test's stated rule for a constant difference
vector at -epsilon."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from eval.validity.alt_test import AltTestSettings


def _agreeing_panel(n: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` items whose three experts agree and a judge that gives their score: every leave-one-out reference is
    that score, both errors are 0, the gap is 0 on every item and in every resample."""
    levels = np.arange(n) % 3.0
    return levels.copy(), np.repeat(levels[:, None], 3, axis=1)


def test_a_ceiling_interval_from_ten_resamples_gives_no_verdict():
    """60 items with a gap of 0 on each: the interval is [0, 0] from any number of resamples. From 10 (score's
    ``--n-boot 10``, its minimum) it reads "inconclusive", as compare calls nothing under 41 resamples at 0.05
    (``paired_resamples_to_call``); from 41 it is "inside"."""
    from eval.scoring.resample_rules import paired_resamples_to_call
    from eval.validity.ceiling import ceiling, verdict

    assert paired_resamples_to_call(0.05) == 41  # 2 / 0.05 is 40; a call needs more
    judge, experts = _agreeing_panel(60)
    few = ceiling(judge, experts, "mode", np.arange(3.0), n_boot=10, rng=np.random.default_rng(0))
    assert few["gap"] == 0.0 and few["gap_ci"] == [0.0, 0.0] and few["n_items"] == 60
    assert few["verdict"] == "inconclusive"
    enough = ceiling(judge, experts, "mode", np.arange(3.0), n_boot=41, rng=np.random.default_rng(0))
    assert enough["gap_ci"] == [0.0, 0.0] and enough["verdict"] == "inside"
    # the floor follows the level: 1 - 0.99 is 0.01, 2 / 0.01 is 200, so 200 resamples are one too few
    assert verdict([0.0, 0.0], 60, 200, level=0.99) == "inconclusive"
    assert verdict([0.0, 0.0], 60, 201, level=0.99) == "inside"
    assert verdict([0.5, 0.6], 60, 40) == "inconclusive" and verdict([0.5, 0.6], 60, 41) == "outside"


def test_compare_and_the_ceiling_read_the_resample_floors_from_one_module():
    """One definition: the names compare reads (and rank, and the ceiling's verdict) are the resample rules'
    functions, the Holm family bound included. Rank's floor is 2 / 0.05 = 40, the paired one
    more than that, 41; a family of m cells needs more than 2 m / 0.05: 81 for 2, 1,001 for 25."""
    from eval.scoring import compare, resample_rules
    from eval.validity import ceiling

    assert compare.paired_resamples_to_call is resample_rules.paired_resamples_to_call
    assert not hasattr(compare, "resamples_to_call")  # rank reads its floor from resample_rules, not through compare
    assert compare.resamples_for_family is resample_rules.resamples_for_family
    assert ceiling.paired_resamples_to_call is resample_rules.paired_resamples_to_call
    assert resample_rules.resamples_to_call(0.05) == 40
    assert [resample_rules.resamples_for_family(m, 0.05) for m in (1, 2, 25)] == [41, 81, 1001]


def test_from_41_resamples_each_end_of_a_95_interval_has_a_draw_beyond_it():
    """Why the ceiling reads 41 and not rank's 40 (``ceiling.verdict``): over the draws 0, 1, ..., n - 1 the 2.5th
    percentile sits at index (n - 1) x 0.025. At 41 that is 1 (up to floating-point rounding), the second smallest
    draw, with the draw 0 beyond it; at 40 it is 0.975, between the two smallest; at 10 it is 0.225, read mostly off
    the smallest draw."""
    from eval.scoring.bootstrap import percentile_interval

    assert percentile_interval(np.arange(41.0), 0.95) == pytest.approx([1.0, 39.0])
    low, high = percentile_interval(np.arange(40.0), 0.95)
    assert low == pytest.approx(0.975) and high == pytest.approx(38.025)
    low, high = percentile_interval(np.arange(10.0), 0.95)
    assert low == pytest.approx(0.225) and high == pytest.approx(8.775)


def _paired(n: int, clusters=None):
    from eval.validity.paired import paired_validity

    judge, experts = _agreeing_panel(n)
    ids = np.array([["a", "b", "c"]] * n, dtype=object)
    worse = np.where(judge == 0, 1.0, judge - 1)  # one level off on every item
    return paired_validity(judge, worse, experts, ids, "mode", AltTestSettings(min_items_per_expert=2), n_boot=50,
                           rng=np.random.default_rng(1), clusters=clusters)


def test_the_paired_figures_say_how_many_units_their_intervals_are_over():
    """Five shared items: a paired ceiling gap of +1 with an interval read as precise. The figure now carries
    ``n_units`` 5 and ``too_few_units`` (under ``MIN_VERDICT_UNITS``, 30); over 30 items it is not too few. Under
    instruction clusters the units are the instructions (60 items in 6: too few)."""
    from eval.scoring.bootstrap import MIN_VERDICT_UNITS

    assert MIN_VERDICT_UNITS == 30
    five = _paired(5)
    gap = five["ceiling_gap"]
    assert gap["delta"] == 1.0 and gap["ci"] == [1.0, 1.0]  # B is one level off on every pair, A on none
    assert gap["n_units"] == 5 and gap["too_few_units"] is True
    assert five["rho"]["n_units"] == 5 and five["rho"]["too_few_units"] is True
    thirty = _paired(30)
    assert thirty["ceiling_gap"]["n_units"] == 30 and thirty["ceiling_gap"]["too_few_units"] is False
    assert thirty["rho"]["n_units"] == 30 and thirty["rho"]["too_few_units"] is False
    clustered = _paired(60, clusters=np.repeat(np.arange(6), 10))
    assert clustered["ceiling_gap"]["n_units"] == 6 and clustered["ceiling_gap"]["too_few_units"] is True


def test_the_paired_ceiling_gap_counts_failures_as_the_section_does_by_default():
    """The section's and the docs' default is ``worst``; ``paired_validity``'s was ``drop``. Four items, three
    experts all 0 on a 0-2 scale: every reference is 0 and every expert error 0. B fails on the first item: under
    ``worst`` its three pairs each cost 2 (the far end), 6 over the 12 pairs, a gap of 0.5; under ``drop`` the item is
    left out and B's gap is 0."""
    from eval.validity.paired import paired_validity

    experts = np.zeros((4, 3))
    judge_a, judge_b = np.zeros(4), np.array([np.nan, 0.0, 0.0, 0.0])
    low, high = np.zeros(4), np.full(4, 2.0)

    def gap(**kwargs):
        return paired_validity(judge_a, judge_b, experts, None, "mode", AltTestSettings(), n_boot=0, scale_low=low,
                               scale_high=high, **kwargs)["ceiling_gap"]

    assert gap()["run"] == 0.5 and gap()["baseline"] == 0.0
    assert gap(ceiling_failures="worst") == gap()
    assert gap(ceiling_failures="drop")["run"] == 0.0


def test_compare_names_the_validity_settings_two_runs_were_computed_with_apart(tmp_path):
    """Two runs' sections differing only in the alt-test's epsilon: ω and ρ side by side are two tests, and the
    headline names ε with both values; with equal settings it says nothing of them."""
    from eval.scoring import item_table
    from eval.scoring.compare import compare, headline
    from eval.validity.section import ValiditySettings, validity_section
    from tests.unit.test_compare_reference_and_counts import EXPERTS, JUDGE, _scored_run
    from tests.unit.test_eval_metrics import _table

    result = compare([_scored_run(tmp_path / "A", "a", JUDGE, EXPERTS),
                      _scored_run(tmp_path / "B", "b", JUDGE, EXPERTS)], n_boot=0)
    n = len(JUDGE)
    table = dataclasses.replace(_table(JUDGE, ["ok"] * n, EXPERTS), expert_ids=item_table.pad_expert_ids(
        [[f"e{j}" for j in range(len(row))] for row in EXPERTS], max(len(row) for row in EXPERTS)))
    section = validity_section(table, "mode", {"standard": np.arange(n)}, ValiditySettings(n_boot=0))
    assert section.settings.alt_test.epsilon == 0.2
    narrow = dataclasses.replace(section, settings=dataclasses.replace(
        section.settings, alt_test=dataclasses.replace(section.settings.alt_test, epsilon=0.1)))

    def with_sections(base, run):
        return dataclasses.replace(result, metrics=[dataclasses.replace(result.metrics[0], validity=base),
                                                    dataclasses.replace(result.metrics[1], validity=run)])

    said = [line for line in headline(with_sections(section, narrow)) if "validity section" in line]
    assert said == ["b's validity section was computed with other settings than a's (alt-test ε 0.1 in b, 0.2 in a): "
                    "ω, ρ and the ceiling gap side by side differ by that as well as by the judges; the paired ρ and "
                    "ceiling gap read both runs with the baseline's."]
    assert not [line for line in headline(with_sections(section, section)) if "validity section" in line]


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_a_constant_difference_at_minus_epsilon_is_not_rejected_whatever_scipy_rounds_it_to():
    """Thirty differences of -0.2 against epsilon 0.2 (scipy: a finite t of -5.39 by rounding, p near 1) and of -0.5
    against 0.5 (scipy: NaN): the stated rule gives both p = 1, marked constant."""
    from eval.validity.alt_test import _p_values

    for value in (-0.2, -0.5):
        p, constant = _p_values(np.full(30, value), np.array([0, 30]), -value)
        assert p.tolist() == [1.0] and constant.tolist() == [True]


def test_a_paired_figure_over_too_few_units_says_so_in_compare_and_survives_its_json():
    """compare.json keeps ``n_units`` and ``too_few_units`` (its reader once dropped unknown keys), and the paired
    table's note says the five items are too few to read the interval, naming them as the comparison's bootstrap
    unit: items (or a file without the unit), and under ``--bootstrap-unit instruction`` 60 items in 6 instructions
    are 6 instructions; thirty items get no such note."""
    from types import SimpleNamespace

    from eval.validity.render import _paired as paired_table
    from judge.metrics_json.validity import PairedValidity

    def note(n: int, unit: str | None = "item", clusters=None) -> list[str]:
        paired = PairedValidity.from_json(_paired(n, clusters))
        comparison = SimpleNamespace(run="b", validity={"all": paired})
        return [row[-1] for row in paired_table(SimpleNamespace(comparisons=[comparison], bootstrap_unit=unit,
                                                                ci_level=None))]

    assert PairedValidity.from_json(_paired(5)).ceiling_gap.too_few_units is True
    for unit in ("item", None):
        notes = note(5, unit)  # rho, the ceiling gap and the leniency
        assert len(notes) == 3 and all("over 5 items, under 30: too few to read the interval" in n for n in notes)
        assert notes[2] == "n.s. (too few to call); over 5 items, under 30: too few to read the interval"
    notes = note(60, "instruction", np.repeat(np.arange(6), 10))
    assert len(notes) == 3 and all("over 6 instructions, under 30: too few to read the interval" in n for n in notes)
    assert notes[2].startswith("n.s. (too few to call); over 60 items; over 6 instructions")
    assert not any("too few" in n for n in note(30))


def test_compare_names_another_ceiling_margin_and_a_section_written_before_it():
    """A section written before the ceiling's margin (``ceiling_margin`` absent: "inside" then meant an interval
    reaching 0) beside one with the 0.1 margin: their verdicts are two rules, and the sentence names the margin with
    both values; two sections with the same margin say nothing."""
    from types import SimpleNamespace

    from eval.scoring.compare import _validity_apart
    from judge.metrics_json.validity import AltTestSettings, SectionSettings

    def run(margin):
        settings = SectionSettings(AltTestSettings(), 200, 0, 0, 0.95, "mode", ceiling_margin=margin)
        return SimpleNamespace(validity=SimpleNamespace(settings=settings))

    def apart(base_margin, run_margin):
        result = SimpleNamespace(metrics=[run(base_margin)], baseline="a")
        return _validity_apart(SimpleNamespace(run="b"), run(run_margin), result)

    assert apart(0.1, None) == ["b's validity section was computed with other settings than a's (ceiling margin "
                                "none (interval reaches 0) in b, 0.1 in a): ω, ρ and the ceiling gap side by side "
                                "differ by that as well as by the judges; the paired ρ and ceiling gap read both runs "
                                "with the baseline's."]
    assert apart(0.1, 0.1) == [] and apart(None, None) == []


def test_the_ceilings_resample_cap_rises_to_the_verdicts_floor():
    """200 resamples a cell at 95 % (floor 41); at 99 % the floor is 201, so the cap rises to it rather than leave
    every ceiling of that level inconclusive; never more than --n-boot asked."""
    from eval.validity.ceiling import ceiling_resamples

    assert [ceiling_resamples(n, 0.95) for n in (10, 41, 200, 1000)] == [10, 41, 200, 200]
    assert [ceiling_resamples(n, 0.99) for n in (200, 201, 1000)] == [200, 201, 201]


def test_validity_md_and_the_settings_name_the_ceilings_own_cap():
    """docs/validity.md and ``ValiditySettings.n_boot`` name the cap ``ceiling_resamples`` applies, the ceiling's own
    ``MAX_RESAMPLES`` (200), not ``eval.input_checks.MAX_RESAMPLES`` (the bound on any --n-boot, 100,000), which
    shares its name: a reader told the latter would expect a ceiling interval of 1,000 resamples from --n-boot 1000."""
    from pathlib import Path

    from eval.validity.ceiling import MAX_RESAMPLES
    from eval.validity.section import ValiditySettings

    text = " ".join((Path(__file__).resolve().parents[2] / "docs" / "validity.md").read_text("utf-8").split())
    assert (f"resamples per cell, at most {MAX_RESAMPLES}: `eval/validity/ceiling.py` `ceiling_resamples` and its "
            "`MAX_RESAMPLES`") in text
    assert "input_checks" not in text
    assert f"``ceiling.MAX_RESAMPLES`` ({MAX_RESAMPLES})" in " ".join(ValiditySettings.__doc__.split())
