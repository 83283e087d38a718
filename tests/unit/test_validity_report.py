"""The validity section where it shows: metrics.json, report.md / report.html's lead sentence, `compare`, and the
alt-test flags of `judge-eval score`, on the bundled sample (whose experts are named) and on unnamed data."""

from __future__ import annotations

import json

import pytest

import judge
from eval.cli import main
from judge.splits import SPLIT_TITLES


def _predictions(records, shift: int) -> list[dict]:
    """The experts' first score (shifted up by ``shift`` on every third item, clipped at 2), one failure."""
    rows = []
    for k, record in enumerate(records):
        if k == 5:
            rows.append({"id": record.id, "judge": "j", "raw_output": "мусор", "feedback": "", "score": None,
                         "parse_ok": False, "error": "no_score", "reason": "", "score_source": None, "latency_s": 0.0})
            continue
        score = min(record.expert_scores[0] + (shift if k % 3 == 0 else 0), 2.0)
        rows.append({"id": record.id, "judge": "j", "raw_output": f"[RESULT] {score:g} [END]", "feedback": "",
                     "score": score, "parse_ok": True, "error": None, "reason": "", "score_source": "verdict",
                     "latency_s": 0.0})
    return rows


def _run(root, name, records, shift, data, *extra) -> dict:
    run = root / name
    run.mkdir()
    (run / "predictions.jsonl").write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in _predictions(records, shift)), encoding="utf-8")
    assert main(["score", "--predictions", str(run), "--data", str(data), "--n-boot", "50", *extra]) == 0
    return json.loads((run / "metrics.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def sample_runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("validity")
    records = judge.load_records(judge.sample_data_path())
    data = judge.sample_data_path()
    exact = _run(root, "exact", records, 0, data)
    lenient = _run(root, "lenient", records, 1, data, "--alt-test-epsilon", "0.1", "--alt-test-failures", "drop",
                   "--alt-test-min-items", "40", "--ceiling-failures", "drop")
    return {"root": root, "records": records, "exact": exact, "lenient": lenient}


def test_metrics_json_has_the_validity_section_per_split_and_cell(sample_runs):
    """Every split has a sentence, an overall cell with the alt-test (8 named sample experts, each scoring >= 30
    items), the ceiling, alpha, kappa, leniency and length bias, and cells by task type and criterion."""
    validity = sample_runs["exact"]["validity"]
    assert validity["named_experts"] is True
    assert set(validity["splits"]) == {"zero_shot", "standard", "all"}
    overall = validity["splits"]["all"]["overall"]
    alt = overall["alt_test"]
    assert alt["available"] and alt["epsilon"] == 0.2 and alt["q"] == 0.05 and alt["scoring"] == "neg_rmse"
    assert alt["n_experts_tested"] == 8 and alt["n_items_judge_failed"] == 1
    assert 0 <= alt["winning_rate"] <= 1 and 0 <= alt["advantage_probability"] <= 1
    wanted = {"ceiling", "alpha_experts", "alpha_with_judge", "kappa_quadratic", "leniency", "length_bias"}
    assert wanted <= set(overall)
    criterion = next(iter(validity["splits"]["all"]["by_criterion"].values()))
    assert {"ceiling", "alt_test", "alpha_experts", "leniency"} <= set(criterion)
    # per task type no sample expert reaches 30 items: every domain's experts are listed untested, 0 of 0 domains
    family = validity["splits"]["all"]["alt_test_domains"]["task_type"]
    assert (family["n_passed"], family["n_domains"]) == (0, 0)
    task_type = next(iter(validity["splits"]["all"]["by_task_type"].values()))
    assert task_type["alt_test"]["n_experts_tested"] == 0 and task_type["alt_test"]["untested"]


def test_alt_test_flags_reach_the_section(sample_runs):
    """--alt-test-epsilon/-failures/-min-items are the section's settings; a judge shifted up by a level on every
    third item is lenient and its rho is below the copy of an expert's scores."""
    alt = sample_runs["lenient"]["validity"]["splits"]["all"]["overall"]["alt_test"]
    assert (alt["epsilon"], alt["failures"], alt["min_items_per_expert"]) == (0.1, "drop", 40)
    # --ceiling-failures is recorded beside the ceiling's other settings (default: worst). The sample's one judge
    # failure is one item of the ceiling, counted in items beside its pairs, and the lead sentence says so.
    assert sample_runs["lenient"]["validity"]["settings"]["ceiling_failures"] == "drop"
    assert sample_runs["exact"]["validity"]["settings"]["ceiling_failures"] == "worst"
    for run, how in (("exact", "each counted as its largest error in the ceiling"),
                     ("lenient", "left out of the ceiling")):
        split = sample_runs[run]["validity"]["splits"]["all"]
        assert split["overall"]["ceiling"]["n_items_judge_failed"] == 1
        assert f"the judge failed on 1 item ({how})" in split["sentence"]
    exact = sample_runs["exact"]["validity"]["splits"]["all"]["overall"]
    lenient = sample_runs["lenient"]["validity"]["splits"]["all"]["overall"]
    assert lenient["alt_test"]["advantage_probability"] < exact["alt_test"]["advantage_probability"]
    assert lenient["leniency"]["mean_signed_error"] > exact["leniency"]["mean_signed_error"]


def test_the_sentence_says_what_the_judge_won(sample_runs):
    """A pass reads "passes ... against R of T experts"; a failure says what it won ("it wins against R of T
    experts, fewer than half"), never "fails ... against 0 of 8", which reads as if it lost to none."""
    for run in ("exact", "lenient"):
        split = sample_runs[run]["validity"]["splits"]["all"]
        alt, sentence = split["overall"]["alt_test"], split["sentence"]
        won = f"{alt['n_experts_rejected']} of {alt['n_experts_tested']} experts"
        expected = (f"passes the alternative annotator test against {won} (" if alt["passed"] else
                    f"fails the alternative annotator test: it wins against {won}, fewer than half (")
        assert expected in sentence.lower(), (run, sentence)


def test_reports_lead_with_one_sentence_per_split(sample_runs):
    """report.md opens (after its title) with the sentence of each split; report.html shows the same sentences and
    the validity tables, not a JSON dump of the section."""
    run = sample_runs["root"] / "exact"
    markdown = (run / "report.md").read_text(encoding="utf-8")
    lines = markdown.splitlines()
    assert lines[2] == "**Can this judge stand in for an expert?**"
    sentence = sample_runs["exact"]["validity"]["splits"]["all"]["sentence"]
    assert "the alternative annotator test against" in sentence and "criteria" in sentence
    assert f"- {SPLIT_TITLES['all']}: {sentence}" in lines[4:8]
    assert "## Validity: can the judge stand in for an expert?" in markdown
    page = (run / "report.html").read_text(encoding="utf-8")
    assert 'id="validity"' in page and "the alternative annotator test against" in page
    assert '"alt_test_domains"' not in page  # rendered as tables, not shown among "other figures"


def test_compare_sets_validity_side_by_side(sample_runs):
    """`judge-eval compare` of the two runs has a validity table per split with both runs' omega and rho."""
    root = sample_runs["root"]
    assert main(["compare", str(root / "exact"), str(root / "lenient"), "--out", str(root / "cmp"),
                 "--n-boot", "20"]) == 0
    text = next((root / "cmp").glob("*.md")).read_text(encoding="utf-8")
    assert "## Validity side by side" in text
    rho = sample_runs["lenient"]["validity"]["splits"]["all"]["overall"]["alt_test"]["advantage_probability"]
    assert f"{rho:.2f}" in text.split("## Validity side by side")[1]
    # paired: rho and the ceiling gap on the shared items, with the baseline's alt-test settings
    assert "## Validity, paired" in text
    from eval.scoring.compare import compare

    paired = compare([root / "exact", root / "lenient"], n_boot=50).comparisons[0].validity["all"]
    exact = sample_runs["exact"]["validity"]["splits"]["all"]["overall"]
    assert paired.rho.baseline == pytest.approx(exact["alt_test"]["advantage_probability"])
    assert paired.rho.delta < 0 and paired.rho.ci[0] <= paired.rho.delta <= paired.rho.ci[1]
    assert paired.ceiling_gap.delta > 0  # the shifted judge is farther from the panel


def test_compare_says_where_the_baselines_paired_rho_is_not_its_sections(sample_runs):
    """compare.md shows each run's section ρ ("Validity side by side") and the baseline's paired ρ ("Validity,
    paired"). Under the baseline's --alt-test-failures drop the paired ρ is over the items both judges scored, so
    the two can differ: the paired lead says so there, and only there (the exact run's alt-test counts failures as
    losses)."""
    from eval.scoring.compare import compare, render_markdown

    root = sample_runs["root"]
    drop = render_markdown(compare([root / "lenient", root / "exact"], n_boot=0)).split("## Validity, paired")[1]
    assert ("The baseline's alt-test drops failures (--alt-test-failures drop), so ρ here is over the items both "
            "judges scored: j (lenient)'s ρ can differ from its own under \"Validity side by side\"") in drop
    loss = render_markdown(compare([root / "exact", root / "lenient"], n_boot=0)).split("## Validity, paired")[1]
    assert "drops failures" not in loss


def test_compare_draws_the_paired_validity_at_one_minus_alpha(sample_runs):
    """At --alpha 0.2 compare.json's ci_level, compare.md and compare.html say 80 % for every paired interval, but the
    paired validity's were drawn at 95 %. Now they are the 80 % intervals of the same resamples (within the 95 % ones,
    not equal to them), and the paired validity's lead names the level."""
    from eval.scoring.compare import compare, render_markdown

    runs = [sample_runs["root"] / "exact", sample_runs["root"] / "lenient"]
    wide = compare(runs, n_boot=50).comparisons[0].validity["all"]
    result = compare(runs, n_boot=50, alpha=0.2)
    narrow = result.comparisons[0].validity["all"]
    for w, n in ((wide.rho, narrow.rho), (wide.ceiling_gap, narrow.ceiling_gap)):
        assert w.delta == n.delta
        assert w.ci[0] <= n.ci[0] <= n.ci[1] <= w.ci[1] and list(n.ci) != list(w.ci)
    assert ") at the 80 % level (ρ: higher is better" in render_markdown(result)


def test_compare_pairs_rho_on_predicted_items_with_the_sections_levels(sample_runs, tmp_path):
    """A run not finished (every fourth item has no prediction) that scores one level above the first expert on
    every third item, past the top of the scale too (a 2 on 0-2 becomes 3, scored as the paper does), under
    ``--alt-test-scoring accuracy``. Its section compares the levels clipped into each item's scale and leaves the
    unpredicted items out; compare's paired rho of it as the baseline must be the same figure: the items both runs
    predicted (the exact run predicted all), the judge as the same levels. items.parquet keeps no scale, so compare
    clips into the criterion's scale from the section's criterion cells (``value_domain``); on the two sample
    criteria whose items mix scales (0-2 and 0-4) that is the wider one, so the judge stays inside the scale there.
    Before, the missing quarter were losses and the 3s stayed 3s."""
    from collections import defaultdict

    records = sample_runs["records"]
    scales = defaultdict(set)
    for record in records:
        scale = judge.scale_of(record.rubrics)
        scales[record.criteria_name].add((scale.min, scale.max))
    rows = []
    for k, record in enumerate(records):
        if k % 4 == 0:
            continue  # not predicted yet
        if k == 5:  # the same failure as the exact run's
            rows.append({"id": record.id, "judge": "j", "raw_output": "мусор", "feedback": "", "score": None,
                         "parse_ok": False, "error": "no_score", "reason": "", "score_source": None,
                         "latency_s": 0.0})
            continue
        score = record.expert_scores[0] + (1 if k % 3 == 0 else 0)
        if len(scales[record.criteria_name]) > 1:
            score = min(score, judge.scale_of(record.rubrics).max)
        rows.append({"id": record.id, "judge": "j", "raw_output": f"[RESULT] {score:g} [END]", "feedback": "",
                     "score": score, "parse_ok": True, "error": None, "reason": "", "score_source": "verdict",
                     "latency_s": 0.0})
    run = tmp_path / "partial"
    run.mkdir()
    (run / "predictions.jsonl").write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    assert main(["score", "--predictions", str(run), "--data", str(judge.sample_data_path()), "--n-boot", "50",
                 "--alt-test-scoring", "accuracy"]) == 0
    written = json.loads((run / "metrics.json").read_text(encoding="utf-8"))
    assert written["splits"]["all"]["overall"]["n_out_of_scale"] > 0  # the clipping is exercised
    own = written["validity"]["splits"]["all"]["overall"]
    assert own["n_items_missing"] == len(records[::4]) and own["alt_test"]["n_items_judge_failed"] == 1
    report = (run / "report.md").read_text(encoding="utf-8")
    assert f"items without a prediction (left out of every figure) | {len(records[::4])} |" in report
    from eval.scoring.compare import compare

    paired = compare([run, sample_runs["root"] / "exact"], n_boot=20).comparisons[0].validity["all"]
    assert paired.n_items == own["n_items"]
    assert paired.rho.baseline == pytest.approx(own["alt_test"]["advantage_probability"])
    assert paired.ceiling_gap.baseline == pytest.approx(own["ceiling"]["gap"])


def test_unnamed_experts_leave_the_alt_test_out_and_say_so(tmp_path):
    """Data without expert_ids (as the released POLLUX data): the alt-test is unavailable with its reason, the
    sentence says so, and the figures that need no identities are still there."""
    records = judge.load_records(judge.sample_data_path())[:60]
    rows = [{k: v for k, v in r.to_dict().items() if k != "expert_ids"} for r in records]
    data = tmp_path / "unnamed.jsonl"
    data.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    metrics = _run(tmp_path, "run", records, 0, data)
    validity = metrics["validity"]
    assert validity["named_experts"] is False
    overall = validity["splits"]["all"]["overall"]
    assert overall["alt_test"]["available"] is False and "names no experts" in overall["alt_test"]["why"]
    assert validity["splits"]["all"]["sentence"].startswith("The alternative annotator test needs named experts")
    assert overall["ceiling"]["n_pairs"] > 0 and overall["length_bias"]["experts"]["pooled"] is None
    assert "is 0 by construction" in overall["length_bias"]["experts"]["why"]  # the reason reaches metrics.json
    assert overall["length_bias"]["flag"] is None  # no experts' slopes to be outside of
    assert "names no experts" in (tmp_path / "run" / "report.md").read_text(encoding="utf-8")


def test_bad_alt_test_setting_is_a_clear_error(sample_runs, capsys):
    """An impossible q is refused with a message naming its flag, exit code 2 (a usage error), not a traceback."""
    capsys.readouterr()
    assert main(["score", "--predictions", str(sample_runs["root"] / "exact"), "--data",
                 str(judge.sample_data_path()), "--alt-test-q", "1.5"]) == 2
    assert capsys.readouterr().err == ("judge-eval score: error: --alt-test-q: must be between 0 and 1 (both "
                                       "excluded), got 1.5\n")


def test_compare_scores_a_failure_at_its_own_items_scale_as_the_section_did(sample_runs, tmp_path):
    """The judge fails on every item of the two sample criteria whose items mix scales (0-2 and 0-4) that is on the
    narrower one, and gives the first expert's score elsewhere. The ceiling scores a failure as the error farther
    from the reference within the item's scale (``--ceiling-failures worst``): on a 0-2 item at most 2, on 0-4 up
    to 4. items.parquet keeps each item's scale, so compare's paired ceiling gap of this run equals its own section's;
    read against the criterion's widest scale (what compare had before the scales were kept) it came out larger."""
    from collections import defaultdict

    from eval.scoring.compare import compare

    records = sample_runs["records"]
    scales = defaultdict(set)
    for record in records:
        scale = judge.scale_of(record.rubrics)
        scales[record.criteria_name].add((scale.min, scale.max))
    rows, n_failed = [], 0
    for record in records:
        scale = judge.scale_of(record.rubrics)
        if len(scales[record.criteria_name]) > 1 and scale.max < max(high for _, high in scales[record.criteria_name]):
            rows.append({"id": record.id, "judge": "j", "raw_output": "мусор", "feedback": "", "score": None,
                         "parse_ok": False, "error": "no_score", "reason": "", "score_source": None,
                         "latency_s": 0.0})
            n_failed += 1
            continue
        score = record.expert_scores[0]
        rows.append({"id": record.id, "judge": "j", "raw_output": f"[RESULT] {score:g} [END]", "feedback": "",
                     "score": score, "parse_ok": True, "error": None, "reason": "", "score_source": "verdict",
                     "latency_s": 0.0})
    assert n_failed > 0
    run = tmp_path / "narrow-failures"
    run.mkdir()
    (run / "predictions.jsonl").write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    assert main(["score", "--predictions", str(run), "--data", str(judge.sample_data_path()), "--n-boot", "50"]) == 0
    own = json.loads((run / "metrics.json").read_text(encoding="utf-8"))["validity"]["splits"]["all"]["overall"]
    assert own["ceiling"]["n_items_judge_failed"] == n_failed
    paired = compare([run, sample_runs["root"] / "exact"], n_boot=20).comparisons[0].validity["all"]
    assert paired.ceiling_gap.baseline == pytest.approx(own["ceiling"]["gap"])


def _rendered(n_boot: int, bootstrap_unit: str | None = "item", level: float = 0.95) -> tuple[str, str]:
    """report.md's and report.html's validity part of a small section scored with ``n_boot`` resamples."""
    from types import SimpleNamespace

    import numpy as np

    from eval.reports.report import markdown_table, md_text
    from eval.validity.render import html_blocks, markdown_lines
    from judge.metrics_json.validity import AltTestSettings, SectionSettings, Validity
    from tests.support.validity_tables import item_table, split_section

    n = 12
    experts = np.stack([np.arange(n) % 3.0] * 2, axis=1)
    block = split_section(item_table(experts[:, 0], experts, low=np.zeros(n), high=np.full(n, 2.0)))
    settings = SectionSettings(AltTestSettings(), n_boot, 0, 0, level, "mode", bootstrap_unit=bootstrap_unit,
                               ceiling_failures="worst")
    result = SimpleNamespace(validity=Validity(settings, False, {"standard": block}))
    return ("\n".join(markdown_lines(result, markdown_table, md_text)),
            "".join(html_blocks(result, lambda value: str(value))))


def test_the_report_says_what_its_bracketed_ranges_are():
    """Under --n-boot 0 the leniency's and the length slopes' t intervals are still there (a formula, not a
    bootstrap): the tables said nothing of it, and "[-3.789, 3.623]" read as a bootstrap interval where none ran."""
    markdown, page = _rendered(0)
    note = ("No bootstrap ran (`--n-boot 0`): the ceiling gap and the α difference have no interval, and the ceiling "
            "no verdict; the bracketed ranges of leniency and the length slopes are 95% t intervals from a formula "
            "(clustered by answer; per item where the table knew neither the answers' lengths nor the instructions), "
            "which need no bootstrap.")
    assert note in markdown and note.replace("`", "") in page
    markdown, _ = _rendered(200, "instruction")
    assert ("Bracketed ranges: the ceiling gap's and the α difference's are 95% percentile bootstrap intervals; "
            "leniency's and the length slopes' are 95% t intervals from a formula (clustered by instruction), which "
            "need no bootstrap.") in markdown


def test_the_intervals_note_says_when_it_cannot_tell_how_they_were_clustered():
    """A metrics.json written before the section recorded its bootstrap unit (``bootstrap_unit`` None) came from a
    version whose formula intervals may not be clustered at all (the earliest took rows as independent): the note
    said "clustered by answer" of them."""
    markdown, _ = _rendered(200, None)
    assert ("leniency's and the length slopes' are 95% t intervals from a formula (as the version that wrote this "
            "file computed them, which did not record how: the earliest took each item as independent), which need "
            "no bootstrap.") in markdown
    assert "clustered by answer" not in markdown


def test_the_intervals_note_says_when_too_few_resamples_leave_the_ceiling_without_a_verdict():
    """Under ``paired_resamples_to_call(1 - level)`` resamples (41 at 0.95, 201 at 0.99) the ceiling's verdict is
    "inconclusive" whatever its interval (``ceiling.verdict``): the report gave no reason beside an interval wholly
    on one side of the margin. ``--n-boot 10`` draws 10; ``--n-boot 41`` is enough at 0.95; at 0.99 the section's
    cap of 200 resamples a cell (``ceiling.MAX_RESAMPLES``) rises to the floor, so ``--n-boot 1000`` draws 201 and
    ``--n-boot 200`` stays one under it (``ceiling.ceiling_resamples``)."""
    markdown, page = _rendered(10)
    said = ("The ceiling gap's intervals are from 10 resamples, under 41: the ceiling gives no verdict "
            "(\"inconclusive\" whatever the interval).")
    assert said in markdown and said in page.replace("&quot;", '"')
    for n_boot in (41, 200):
        assert "the ceiling gives no verdict" not in _rendered(n_boot)[0]
    assert ("from 200 resamples, under 201: the ceiling gives no verdict") in _rendered(200, level=0.99)[0]
    assert "the ceiling gives no verdict" not in _rendered(1000, level=0.99)[0]
    assert "the ceiling gives no verdict" not in _rendered(0)[0]  # no bootstrap: the note says so its own way


def test_the_inconclusive_verdict_points_to_the_note_naming_the_resample_floor():
    """The verdict's gloss named "--n-boot under 41 at the 95% level" beside every row, also of a section scored at
    99 % (floor 201); the floor is the level's, and the note on the bracketed ranges names it."""
    from eval.validity.render import _VERDICTS

    assert _VERDICTS["inconclusive"].endswith("read off too few resamples: see the note on the bracketed ranges)")
    assert "41" not in _VERDICTS["inconclusive"]


def test_the_length_row_says_why_there_is_no_slope_or_no_flag():
    """A length bias without a judge slope (two answers: no degrees of freedom left, ``bias.cluster_slope``) said
    "—"; one with a slope inside no flag said "not outside the experts", also where the judge's slope was over too
    few answers to flag (``bias.MIN_SLOPE_ANSWERS``)."""
    from eval.validity.render import _length_text
    from judge.metrics_json.validity import LengthBias

    experts = {"by_expert": {"a": {"n": 40, "slope": 0.0, "ci": [-0.1, 0.1]}}, "range": [0.0, 0.0]}
    none = LengthBias.from_json({"judge": None, "experts": experts, "flag": None})
    assert _length_text(none) == ("no judge slope: fewer than 3 answers with a judge score on the scale and two "
                                  "experts or more, or one length for all (instructions under --bootstrap-unit "
                                  "instruction)")
    inside = LengthBias.from_json({"judge": {"n": 40, "slope": 0.5, "ci": [0.4, 0.6]}, "experts": experts,
                                   "flag": None})
    assert _length_text(inside).endswith("experts 0.000 to 0.000: not flagged (a flag needs the interval outside "
                                         "the experts', over 30 answers (instructions under --bootstrap-unit "
                                         "instruction))")


def test_compare_notes_a_paired_interval_over_fewer_resamples():
    """compare.md's paired row says how many of the drawn resamples an interval is over, and why there is none."""
    from eval.validity.render import _resamples_note

    assert _resamples_note(200, 200, [0.1, 0.2], "x") == "" and _resamples_note(None, 200, [0.1, 0.2], "x") == ""
    assert (_resamples_note(190, 200, [0.1, 0.2], "no tested expert's item")
            == "interval over 190 of 200 resamples (the rest drew no tested expert's item)")
    assert (_resamples_note(150, 200, [None, None], "no item with a ceiling pair")
            == "no interval: only 150 of 200 resamples usable (the rest drew no item with a ceiling pair)")


def test_the_tables_say_over_which_items_the_ceiling_and_alpha_are_and_why_alpha_has_no_interval():
    """40 items on 0-2: two scored by two experts who agree (0, 0 and 2, 2), where the judge says 1; 38 by one expert.
    The ceiling has pairs on the 2 items alone (38 with fewer than 2 experts), both alphas are over those 2, and a
    resample of the 2 that draws one item twice has every expert value on one level, so no alpha: half of the 200
    resamples on average, under the 90 % an interval needs."""
    from types import SimpleNamespace

    import numpy as np

    from eval.reports.report import markdown_table, md_text
    from eval.validity.render import markdown_lines
    from eval.validity.section import ValiditySettings, validity_section
    from tests.support.validity_tables import table_on_0_to_2

    experts = np.full((40, 2), np.nan)
    experts[:, 0] = np.arange(40) % 3.0
    experts[:2] = [[0.0, 0.0], [2.0, 2.0]]
    judge = np.r_[1.0, 1.0, experts[2:, 0]]
    validity = validity_section(table_on_0_to_2(judge, experts, None), "mode", {"standard": np.arange(40)},
                                ValiditySettings(n_boot=0, alpha_boot=200))
    boot = validity.splits["standard"].overall.agreement.alpha_boot
    assert boot.resamples == 200 and 70 < boot.n_resamples < 130
    markdown = "\n".join(markdown_lines(SimpleNamespace(validity=validity), markdown_table, md_text))
    assert ", over 2 of 40 items (38 with fewer than 2 experts)" in markdown
    assert (f"(no interval: {boot.n_resamples} of 200 resamples had both α defined, under 90%); both over 2 of 40 "
            "items, those two experts scored") in markdown


def test_an_undefined_p_value_reads_as_a_dash_before_and_after_metrics_json():
    """metrics.json writes an undefined p-value (NaN) as null; a section rendered before that round trip held the NaN
    itself and read "p nan". Both read "—" now, as the section's other figures do."""
    from eval.validity.render import _num, _p

    assert _p(float("nan")) == _p(None) == _num(float("nan")) == "—"
    assert (_p(0.0004), _p(0.0123)) == ("< 0.001", "0.012")


def test_report_html_links_only_to_sections_it_holds(sample_runs):
    """A validity section with no split draws nothing: report.html's navigation then has no "Validity" link, and
    every in-page link it has points at an id the page holds."""
    import re

    from eval.reports.html_report import render_report_page
    from judge.metrics_json.metrics import Metrics

    for splits in (sample_runs["exact"]["validity"]["splits"], {}):
        data = {**sample_runs["exact"], "validity": {**sample_runs["exact"]["validity"], "splits": splits}}
        page = render_report_page(Metrics.from_json(data), None)
        ids = set(re.findall(r'id="([^"]+)"', page))
        links = re.findall(r'href="#([^"]+)"', page)
        assert links and set(links) <= ids, set(links) - ids
        assert ('href="#validity"' in page) == bool(splits)
