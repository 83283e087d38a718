"""What ``judge-eval compare`` and ``score`` write: the paired validity's absence for a baseline without a validity
section and the resamples it drew, the pages' notes on data or predictions that can no longer be read, and files
written whole."""

from __future__ import annotations

import html
import json

import pytest

import judge
from eval.cli import main
from tests.unit.test_compare_reference_and_counts import EXPERTS, JUDGE, _scored_run
from tests.unit.test_validity_report import _run


def test_a_baseline_without_a_validity_section_is_said_in_place_of_the_paired_validity(tmp_path):
    """A baseline whose metrics.json predates the validity section: compare.md and compare.html say why the paired
    validity is absent, and what to do."""
    from eval.reports.html_report import render_compare_page
    from eval.scoring.compare import compare, render_markdown

    result = compare([_scored_run(tmp_path / "A", "a", JUDGE, EXPERTS),
                      _scored_run(tmp_path / "B", "b", JUDGE, EXPERTS)], n_boot=50)
    said = "the baseline's metrics.json has no validity section (written before it existed); score it again"
    assert said in render_markdown(result)
    assert said.replace("'", "&#x27;") in render_compare_page(result, None)


@pytest.fixture(scope="module")
def sample_runs(tmp_path_factory):
    """Two runs scored by ``judge-eval score`` on the bundled sample (with their validity sections)."""
    root = tmp_path_factory.mktemp("scored-runs")
    records, data = judge.load_records(judge.sample_data_path()), judge.sample_data_path()
    _run(root, "exact", records, 0, data)
    _run(root, "lenient", records, 1, data)
    return root


def test_the_paired_validity_states_the_resamples_it_drew(sample_runs, tmp_path, monkeypatch):
    """The paired validity draws at most ``PAIRED_BOOT`` resamples whatever --n-boot, where the level's call floor is
    under that cap (11 at --alpha 0.2, ``paired_resamples``): its lead says how many it drew, not the --n-boot
    compare.md's note states for the rest."""
    import eval.validity.paired as paired

    monkeypatch.setattr(paired, "PAIRED_BOOT", 12)
    assert main(["compare", str(sample_runs / "exact"), str(sample_runs / "lenient"), "--out", str(tmp_path / "c"),
                 "--n-boot", "20", "--alpha", "0.2"]) == 0
    text = (tmp_path / "c" / "compare.md").read_text(encoding="utf-8")
    lead = text.split("## Validity, paired", 1)[1].strip().splitlines()[0]
    assert "a paired bootstrap interval over items (12 resamples, fewer than --n-boot's 20" in lead
    assert "from 11 resamples or more" in lead


def test_the_paired_validity_draws_the_resamples_its_leniency_call_needs(sample_runs, tmp_path, monkeypatch):
    """A cap under the level's call floor rises to it (``paired_resamples``), so the lead never says it drew fewer
    resamples than the "from N resamples or more" a leniency call needs: with the cap at 12 and --alpha 0.05 (floor
    41), --n-boot 60 draws 41. The same holds of the real cap of 200 at --alpha 0.01 (floor 201)."""
    import eval.validity.paired as paired

    monkeypatch.setattr(paired, "PAIRED_BOOT", 12)
    assert main(["compare", str(sample_runs / "exact"), str(sample_runs / "lenient"), "--out", str(tmp_path / "c"),
                 "--n-boot", "60"]) == 0
    text = (tmp_path / "c" / "compare.md").read_text(encoding="utf-8")
    lead = text.split("## Validity, paired", 1)[1].strip().splitlines()[0]
    assert "a paired bootstrap interval over items (41 resamples, fewer than --n-boot's 60" in lead
    assert "from 41 resamples or more" in lead
    assert "under the 41 a call needs" not in text  # no leniency row is n.s. for want of resamples


def test_compare_reads_the_baselines_scale_ends_once_over_its_splits(sample_runs, tmp_path, monkeypatch):
    """The paired validity of every split (all, standard, zero_shot) reads the baseline's items against the whole
    table's scale ends (``eval.validity.scale_reading.reading_ends``, a split's own experts can be one unanimous
    criterion): read once per comparison and indexed per split, not assembled from the whole table for each."""
    import eval.validity.scale_reading as scale_reading

    calls = []
    reading_ends = scale_reading.reading_ends

    def counted(table):
        calls.append(len(table))
        return reading_ends(table)

    monkeypatch.setattr(scale_reading, "reading_ends", counted)
    result = json.loads((sample_runs / "exact" / "metrics.json").read_text(encoding="utf-8"))
    assert len(result["validity"]["splits"]) > 1
    assert main(["compare", str(sample_runs / "exact"), str(sample_runs / "lenient"), "--out", str(tmp_path / "c"),
                 "--n-boot", "0"]) == 0
    assert len(calls) == 1


def test_compare_and_score_write_their_files_whole(sample_runs, tmp_path, monkeypatch):
    """metrics.json, report.md, report.html, compare.md and compare.html go through ``write_atomically`` (a kill
    mid-write leaves the earlier file, never a cut one)."""
    import eval.cli
    import eval.reports.html_report
    import eval.scoring.score
    from judge.plumbing.atomic_write import write_atomically

    written = []

    def recording(path, content, **kwargs):
        written.append(path.name)
        return write_atomically(path, content, **kwargs)

    for module in (eval.cli, eval.reports.html_report, eval.scoring.score):
        monkeypatch.setattr(module, "write_atomically", recording)
    run = tmp_path / "run"
    run.mkdir()
    (run / "predictions.jsonl").write_text((sample_runs / "exact" / "predictions.jsonl").read_text(encoding="utf-8"),
                                           encoding="utf-8")
    assert main(["score", "--predictions", str(run), "--data", str(judge.sample_data_path()), "--n-boot", "0"]) == 0
    assert {"metrics.json", "report.md", "report.html"} <= set(written)
    assert main(["compare", str(sample_runs / "exact"), str(run), "--out", str(tmp_path / "c"), "--n-boot", "0"]) == 0
    assert {"compare.json", "compare.md", "compare.html"} <= set(written)


def test_unreadable_data_and_predictions_leave_a_note_on_the_pages(tmp_path):
    """The data and the predictions a run's metrics.json names were since replaced by a file that is not JSON: the
    pages are written without their texts, saying the file is unreadable and why, as for a missing one (compare
    stopped after writing compare.json and compare.md)."""
    from eval.reports.html_report import write_compare_page, write_report_page
    from eval.scoring.compare import compare

    garbage = tmp_path / "garbage.jsonl"
    garbage.write_text("{not json\n", encoding="utf-8")
    runs = [_scored_run(tmp_path / name, name, JUDGE, EXPERTS) for name in ("a", "b")]
    for run in runs:
        metrics = json.loads((run / "metrics.json").read_text(encoding="utf-8"))
        metrics.update(data=str(garbage), predictions=str(garbage))
        (run / "metrics.json").write_text(json.dumps(metrics), encoding="utf-8")

    page = write_report_page(runs[0]).read_text(encoding="utf-8")
    assert f"Unreadable: the labelled data ({garbage}: " in page
    assert f"Unreadable: the predictions ({garbage}: " in page
    page = write_compare_page(compare(runs, n_boot=50), tmp_path / "cmp").read_text(encoding="utf-8")
    assert f"Unreadable: the labelled data ({garbage}: " in page
    assert f"Unreadable: the predictions of b ({garbage}: " in page


def test_compare_refuses_a_run_scored_on_an_answer_rewritten_since(sample_runs, tmp_path, capsys):
    """score keeps each answer's length in items.parquet; a second run scored on the sample with one answer
    rewritten under the same id is refused by compare in one line naming the item, not paired with the first."""
    from eval.scoring import item_table

    table, _ = item_table.read_table(sample_runs / "exact" / "items.parquet")
    records = {r.id: r for r in judge.load_records(judge.sample_data_path())}
    assert [int(n) for n in table.answer_chars] == [len(records[i].answer) for i in table.ids]

    rows = [json.loads(line) for line in judge.sample_data_path().read_text(encoding="utf-8").splitlines()]
    rows[0]["answer"] += " И ещё одно предложение."
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    run = tmp_path / "run"
    run.mkdir()
    (run / "predictions.jsonl").write_text((sample_runs / "exact" / "predictions.jsonl").read_text(encoding="utf-8"),
                                           encoding="utf-8")
    assert main(["score", "--predictions", str(run), "--data", str(data), "--n-boot", "0"]) == 0
    capsys.readouterr()
    assert main(["compare", str(sample_runs / "exact"), str(run), "--out", str(tmp_path / "c"), "--n-boot", "0"]) == 2
    err = capsys.readouterr().err
    assert "hold different items under the same ids: the answer length in characters differs on" in err
    assert f"(item {rows[0]['id']!r}: {len(rows[0]['answer']) - 24} in " in err and "Traceback" not in err


def test_a_run_without_a_validity_section_keeps_its_row_in_the_validity_side_by_side(sample_runs, tmp_path):
    """The run compared with the baseline was scored before the validity section existed: its row in "Validity side
    by side" says so (compare.md and compare.html), where it was left out and the table read as the baseline's
    alone, with no word of the other run. A test only one run's section holds keeps its table too, the other run's
    row saying it has no figures there."""
    import shutil

    from eval.reports.html_report import render_compare_page
    from eval.scoring.compare import compare, render_markdown

    older = tmp_path / "older"
    shutil.copytree(sample_runs / "lenient", older)
    metrics = json.loads((older / "metrics.json").read_text(encoding="utf-8"))
    del metrics["validity"]
    (older / "metrics.json").write_text(json.dumps(metrics), encoding="utf-8")
    result = compare([sample_runs / "exact", older], n_boot=20)
    said = "no validity section (its metrics.json was written before it existed); score it again"
    text = render_markdown(result)
    table = text.split("## Validity side by side", 1)[1].split("## Validity, paired", 1)[0]
    rows = [line for line in table.splitlines() if line.startswith("| j (")]
    assert len(rows) == 6  # two runs, three tests
    assert [row.split(" | ")[0] for row in rows] == ["| j (exact)", "| j (older)"] * 3
    assert all(row.endswith(f"| — | — | — | — | — | {said} |") for row in rows[1::2])
    assert said.replace("'", "&#x27;") in render_compare_page(result, None)

    one_test = tmp_path / "one-test"
    shutil.copytree(sample_runs / "lenient", one_test)
    metrics = json.loads((one_test / "metrics.json").read_text(encoding="utf-8"))
    del metrics["validity"]["splits"]["zero_shot"]
    (one_test / "metrics.json").write_text(json.dumps(metrics), encoding="utf-8")
    text = render_markdown(compare([sample_runs / "exact", one_test], n_boot=20))
    zero_shot = text.split("## Validity side by side", 1)[1].split("### Standard test", 1)[0]
    assert "### Zero-Shot test" in zero_shot
    assert "| j (one-test) | — | — | — | — | — | no validity figures for this test in its metrics.json |" in zero_shot


def test_the_decision_is_one_sentence_first_in_compare_md_the_page_and_the_console(sample_runs, tmp_path, capsys):
    """A reader deciding whether the run replaces the baseline learns it in one sentence at the top, from every
    overall call of the widest test (MAE, Spearman, VC and the failed verdicts), not from the MAE's call alone among
    three sentences, with the Spearman and VC calls only in the tables below (and, on compare.html, below the side
    by side and validity tables)."""
    from dataclasses import replace

    from eval.reports.html_report import render_compare_page
    from eval.scoring.compare import compare, decision, render_markdown

    out = tmp_path / "c"
    assert main(["compare", str(sample_runs / "exact"), str(sample_runs / "lenient"), "--out", str(out),
                 "--n-boot", "200"]) == 0
    worse = ("Decision on the Zero-Shot + Standard: j (lenient) is worse than j (exact) (MAE worse, Spearman worse, "
             "Verdict Confidence worse, failed verdicts n.s.; 297 items both scored, each call at alpha 0.05).")
    console = capsys.readouterr().out.splitlines()
    assert console[:2] == ["Judge comparison (baseline: j (exact))", f"- {worse}"]
    text = (out / "compare.md").read_text(encoding="utf-8")
    assert text.splitlines()[2] == f"**{worse}**"
    page = (out / "compare.html").read_text(encoding="utf-8")
    assert page.index(html.escape(worse)) < page.index('<h2 id="side">')

    result = compare([sample_runs / "lenient", sample_runs / "exact"], n_boot=200)
    assert decision(result, 0).startswith("Decision on the Zero-Shot + Standard: j (exact) is better than j (lenient) "
                                          "(MAE better, Spearman better, Verdict Confidence better, failed verdicts "
                                          "n.s.;")
    block = result.comparisons[0].splits["all"]
    mixed = replace(block, overall={**block.overall, "vc_judge": replace(block.overall["vc_judge"], verdict="worse")})
    result.comparisons[0].splits["all"] = mixed
    assert ": j (exact) is better on MAE and Spearman and worse on Verdict Confidence than j (lenient) (MAE better, " \
        in decision(result, 0)
    none = {m: replace(p, verdict="n.s.") for m, p in block.overall.items()}
    result.comparisons[0].splits["all"] = replace(block, overall=none)
    assert ": no difference between j (exact) and j (lenient) was shown (MAE n.s., Spearman n.s., Verdict " \
        "Confidence n.s., failed verdicts n.s.;" in decision(result, 0)
    assert decision(result, 0) in render_markdown(result) and html.escape(decision(result, 0)) in \
        render_compare_page(result, None)

    result = compare([sample_runs / "exact", sample_runs / "lenient"], n_boot=0)
    # the failed verdicts are called without resamples: their n.s. is said, not read as no call at all
    assert result.comparisons[0].splits["all"].failures.verdict == "n.s."
    assert decision(result, 0) == ("Decision on the Zero-Shot + Standard: no MAE, Spearman or Verdict Confidence call "
                                   "(--n-boot 0); failed verdicts n.s.; MAE 0.114 higher for j (lenient) than for "
                                   "j (exact) on the 297 items both scored.")
    result.comparisons[0].splits["all"] = replace(result.comparisons[0].splits["all"], failures=None)
    assert decision(result, 0) == ("Decision on the Zero-Shot + Standard: no calls (--n-boot 0); MAE 0.114 higher for "
                                   "j (lenient) than for j (exact) on the 297 items both scored.")


def test_the_decision_under_n_boot_0_says_an_equal_mae_as_equal_for_both(sample_runs):
    """No call under --n-boot 0, and an MAE difference of zero: "MAE equal for B and A", where it read "MAE equal for B
    than for A"."""
    from dataclasses import replace

    from eval.scoring.compare import compare, decision

    result = compare([sample_runs / "exact", sample_runs / "lenient"], n_boot=0)
    block = result.comparisons[0].splits["all"]
    equal = {**block.overall, "mae": replace(block.overall["mae"], delta=0.0)}
    result.comparisons[0].splits["all"] = replace(block, overall=equal)
    assert decision(result, 0) == ("Decision on the Zero-Shot + Standard: no MAE, Spearman or Verdict Confidence call "
                                   "(--n-boot 0); failed verdicts n.s.; MAE equal for j (lenient) and j (exact) on the "
                                   "297 items both scored.")


def test_the_decision_says_where_a_run_is_unfinished(sample_runs, tmp_path):
    """A run with predictions for its first 100 items of 341: its calls are over those, and the decision says the
    run has no prediction for the rest, so that it is not read as a whole run's."""
    from eval.scoring.compare import compare, decision
    from tests.unit.test_validity_report import _run

    records = judge.load_records(judge.sample_data_path())
    _run(tmp_path, "part", records[:100], 1, judge.sample_data_path())
    said = decision(compare([sample_runs / "exact", tmp_path / "part"], n_boot=100), 0)
    assert said.endswith("each call at alpha 0.05); j (part) has no prediction for 241 of its 341 items."), said


def test_every_delta_is_written_with_its_sign(sample_runs, tmp_path):
    """A delta is run − baseline, and its sign is the finding: compare.md's paired rows, the headline, compare.html's
    cells and the paired validity write a positive one "+0.100", as the validity sentences write "+0.11" (it read
    "0.100" beside "-0.079"), and one that rounds to zero "0.000", never "-0.000"."""
    from dataclasses import replace

    from eval.reports.html_report import render_compare_page
    from eval.reports.report import fmt_delta
    from eval.scoring.compare import compare, headline, render_markdown

    assert [fmt_delta(v) for v in (0.1, -0.0794, -1e-17, 0.0, float("nan"), None)] == \
        ["+0.100", "-0.079", "0.000", "0.000", "—", "—"]
    result = compare([sample_runs / "exact", sample_runs / "lenient"], n_boot=200)
    text = render_markdown(result)
    assert "| MAE | 0.175 | 0.290 | +0.114 | [" in text and "| Spearman | 0.892 | 0.809 | -0.083 | [" in text
    assert any(line.startswith("On the Zero-Shot + Standard, j (lenient)'s MAE is 0.114 higher than j (exact)'s "
                               "(delta +0.114, ") for line in headline(result))
    paired = text.split("## Validity, paired", 1)[1]
    assert "| j (lenient) | Zero-Shot + Standard | ceiling gap | -0.094 | 0.029 | +0.123 [" in paired
    assert "| j (lenient) | Zero-Shot + Standard | ρ (advantage probability) | 0.940 | 0.839 | -0.101 [" in paired
    page = render_compare_page(result, None)
    assert ">+0.114 <span class=\"ci\">[" in page and ">-0.083 <span class=\"ci\">[" in page
    block = result.comparisons[0].splits["all"]
    noise = replace(block.overall["spearman"], delta=-1e-17)
    result.comparisons[0].splits["all"] = replace(block, overall={**block.overall, "spearman": noise})
    assert "| Spearman | 0.892 | 0.809 | 0.000 | [" in render_markdown(result)


def test_the_side_by_side_tables_by_group_say_n_and_what_the_bracket_is(sample_runs):
    """compare.md's tables of each run's own MAE and Spearman by evaluated model, task type and criterion gave a
    value and a bracket per run: a criterion's "0.000 [0.000, 0.000]" over two items read like one over forty, and
    nothing said the bracket is the run's own bootstrap interval. Each cell now says how many items (Spearman: the
    pairs) it is over, and a lead says what the numbers are."""
    from eval.scoring.compare import compare, render_markdown

    text = render_markdown(compare([sample_runs / "exact", sample_runs / "lenient"], n_boot=20))
    part = text.split("### Zero-Shot test: MAE by evaluated model", 1)[1].split("###", 1)[0]
    assert "| sokol-70b | 0.220 [" in part and "], n 41 | 0.122 [" in part
    assert ("Each run on its own scored items, by evaluated model, task type and criterion: the figure, its own "
            "95 % bootstrap interval in brackets (where its --n-boot drew one) and n, the items it is over "
            "(Spearman: the pairs); the paired deltas are under each comparison below.") in text
    spearman = text.split("### Zero-Shot test: Spearman by evaluated model", 1)[1].split("###", 1)[0]
    assert "], n 41 |" in spearman


def test_the_decision_of_a_run_that_failed_on_every_item_is_its_failures_call(sample_runs, tmp_path):
    """A run whose every verdict failed shares no scored item with the baseline, so there is no MAE, Spearman or VC
    call; its failures are called (McNemar) all the same, and the decision says it is worse, not "none"."""
    from eval.scoring.compare import compare, decision

    run = tmp_path / "failing"
    run.mkdir()
    rows = [json.loads(line) for line in (sample_runs / "exact" / "predictions.jsonl").read_text("utf-8").splitlines()]
    failed = [dict(row, score=None, parse_ok=False, error="no_score", raw_output="мусор", score_source=None)
              for row in rows]
    (run / "predictions.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in failed), "utf-8")
    assert main(["score", "--predictions", str(run), "--data", str(judge.sample_data_path()), "--n-boot", "0"]) == 0
    said = decision(compare([sample_runs / "exact", run], n_boot=50), 0)
    assert said == ("Decision on the Zero-Shot + Standard: j (failing) is worse than j (exact) (failed verdicts worse: "
                    "341 of the 341 items both have a prediction for against 1; no item scored by both, so no MAE, "
                    "Spearman or Verdict Confidence call)."), said


def test_the_decision_says_when_a_call_had_too_few_units(sample_runs):
    """Calls over fewer than 30 paired units (a small test, or few instructions under --bootstrap-unit instruction)
    are n.s. however large the delta: the decision's "no difference was shown" says why beside each such call,
    where it read as the data showing none."""
    from dataclasses import replace

    from eval.scoring.compare import compare, decision

    result = compare([sample_runs / "exact", sample_runs / "lenient"], n_boot=100)
    block = result.comparisons[0].splits["all"]
    few = {m: replace(p, n_units=12, verdict="n.s.") for m, p in block.overall.items()}
    result.comparisons[0].splits["all"] = replace(block, overall=few)
    said = decision(result, 0)
    assert (": no difference between j (lenient) and j (exact) was shown (MAE n.s. (too few to call), "
            "Spearman n.s. (too few to call), Verdict Confidence n.s. (too few to call), failed verdicts n.s.; ") in said, \
        said


def test_the_decision_under_n_boot_0_keeps_the_failures_call(sample_runs, tmp_path):
    """--n-boot 0 draws no resample, so MAE, Spearman and VC are not called; the failed verdicts' McNemar call is an
    exact test and is made all the same (the headline says it). A run failing on every other item was decided "no
    calls", its MAE alone said, and the failures call that tells it apart left out."""
    from eval.scoring.compare import compare, decision

    run = tmp_path / "half"
    run.mkdir()
    rows = [json.loads(line) for line in (sample_runs / "exact" / "predictions.jsonl").read_text("utf-8").splitlines()]
    half = [dict(row, score=None, parse_ok=False, error="no_score", raw_output="мусор", score_source=None)
            if k % 2 else row for k, row in enumerate(rows)]
    (run / "predictions.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in half), "utf-8")
    assert main(["score", "--predictions", str(run), "--data", str(judge.sample_data_path()), "--n-boot", "0"]) == 0
    result = compare([sample_runs / "exact", run], n_boot=0)
    f = result.comparisons[0].splits["all"].failures
    assert (f.verdict, f.n, f.a) == ("worse", 341, 1)
    said = decision(result, 0)
    assert said.startswith("Decision on the Zero-Shot + Standard: j (half) is worse than j (exact) (failed verdicts "
                           f"worse: {f.b} of the 341 items both have a prediction for against 1; no MAE, Spearman or "
                           "Verdict Confidence call under --n-boot 0; MAE "), said
    assert said.endswith(f" on the {result.comparisons[0].splits['all'].overall['mae'].n} items both scored)."), said
