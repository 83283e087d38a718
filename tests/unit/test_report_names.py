"""Names and codes from the data, as every report shows them: cut by one definition (``eval.reports.names``; codes
counted by ``eval.scoring.error_codes``) in the run's tables, the validity tables, the ranking pages, the plots'
labels and the failure counts; and the PNG plots written whole, never stale, even where an interval misses its MAE by
a float step."""

from __future__ import annotations

import dataclasses
import hashlib
import html
import json

import numpy as np
from PIL import Image

from eval.reports import names
from eval.reports.names import NAME_CHARS, shown_name, shown_names
from eval.scoring import item_table
from eval.scoring.error_codes import ERROR_CODE_CHARS, FAILURE_CODES_KEPT, cut_codes_note, other_codes_key
from judge.metrics_json.metrics import Metrics
from tests.support.sixty_items import sixty_item_metrics

LONG = "К" * 5000
# 200 first characters, "…", the 99 last: 300 in all
LONG_SHOWN = "К" * 200 + "…" + "К" * 99


def _mark(name: str) -> str:
    return hashlib.sha256(name.encode("utf-8")).hexdigest()[:8]


def test_one_definition_of_the_cut():
    """The explorer's names are the leaf module's (one definition, re-exported), and a cut at another width keeps a
    third of it, less one, from the end: 48 -> the first 32, "…", the last 15."""
    from eval.reports import html_explorer

    assert html_explorer.shown_name is shown_name and html_explorer.NAME_CHARS == NAME_CHARS == 300
    assert shown_name(LONG) == LONG_SHOWN
    name = "a" * 40 + "b" * 40
    assert shown_name(name, 48) == "a" * 32 + "…" + "b" * 15


def test_two_names_whose_marks_read_alike_get_longer_marks():
    """Three names cut to 10 characters alike ("abcdefg…zz"); two of them share the first 8 hex digits of their
    SHA-256 (7fac2046, found by a search over such names): those two are marked with 16 digits, which differ
    (…dab72cb7 / …25676272), and the third keeps its 8. Distinct names, distinct labels."""
    one, two, three = "abcdefg111477zz", "abcdefg156454zz", "abcdefg12zz"
    labels = shown_names([one, two, three], 10)
    assert labels == {one: "abcdefg…zz (#7fac2046dab72cb7)", two: "abcdefg…zz (#7fac204625676272)",
                      three: f"abcdefg…zz (#{_mark(three)})"}
    assert len(set(labels.values())) == 3


def test_a_mark_that_still_repeats_grows_to_the_whole_digest(monkeypatch):
    """With marks of 1 digit, then the whole digest: "abcdefg10zz" and "abcdefg19zz" both start 0 (059b…, 0777…),
    so each shows its whole SHA-256; "abcdefg11zz" (f805…) keeps its one digit."""
    monkeypatch.setattr(names, "_MARK_DIGITS", (1, 64))
    one, two, three = "abcdefg10zz", "abcdefg19zz", "abcdefg11zz"
    full = {name: hashlib.sha256(name.encode("utf-8")).hexdigest() for name in (one, two)}
    assert full[one][:4] == "059b" and full[two][:4] == "0777"
    assert shown_names([one, two, three], 10) == {one: f"abcdefg…zz (#{full[one]})",
                                                  two: f"abcdefg…zz (#{full[two]})", three: "abcdefg…zz (#f)"}


# ------------------------------------------------------------------------------------------- failures by code


def _failed_table(codes: list[str]) -> item_table.ItemTable:
    """Four scored items (judge 1 against experts 1, 1) and one parse failure per code."""
    from tests.support.validity_tables import item_table as table_of

    n = 4 + len(codes)
    judge = np.array([1.0] * 4 + [np.nan] * len(codes))
    table = table_of(judge, np.ones((n, 2)), status=["ok"] * 4 + ["parse_failed"] * len(codes))
    return dataclasses.replace(table, error=np.array([""] * 4 + codes, dtype=object))


def test_long_error_codes_are_counted_under_their_cut_each_apart():
    """Two 5,000-character codes that differ only in their middle, and one of its own: each failure counted once
    (none dropped, none merged), under a code of at most 64 characters plus its mark: the first 43, "…", the last
    20; the two that read alike marked by their SHA-256. metrics.json holds no 100 characters of either, and
    report.md's failure line says the codes were cut."""
    from eval.reports.report import render_markdown

    one, two = "x" * 2500 + "1" + "x" * 2499, "x" * 2500 + "2" + "x" * 2499
    result = item_table.evaluate(_failed_table([one, two, "no_score"]), n_boot=0, vc_repeats=1)
    cut = "x" * 43 + "…" + "x" * 20
    assert len(cut) == ERROR_CODE_CHARS
    text = item_table.dumps(result)
    metrics = Metrics.from_json(json.loads(text))
    failures = metrics.splits["standard"].failures
    assert failures == {f"{cut} (#{_mark(one)})": 1, f"{cut} (#{_mark(two)})": 1, "no_score": 1}
    assert "x" * 100 not in text
    report = render_markdown(metrics)
    line = next(line for line in report.splitlines() if line.startswith("Failures by reason"))
    assert line.endswith(cut_codes_note(failures)) and "codes over 64 characters" in line


def test_the_rarest_of_many_codes_are_counted_together():
    """100 distinct long codes once each and "no_score" three times: "no_score", then the 49 codes whose labels come
    first (all counted once: ties by label, so by their marks), then one entry of the other 51 with their 51 failures.
    51 keys, their counts the 103 failed items; the failure line says both that codes were cut and that the rarest
    were counted together."""
    codes = ["x" * 2500 + f"{k:02d}" + "x" * 2500 for k in range(100)]
    result = item_table.evaluate(_failed_table(codes + ["no_score"] * 3), n_boot=0, vc_repeats=1)
    block = Metrics.from_json(json.loads(item_table.dumps(result))).splits["standard"]
    assert FAILURE_CODES_KEPT == 50
    cut = "x" * 43 + "…" + "x" * 20
    first = sorted(f"{cut} (#{_mark(code)})" for code in codes)[:49]
    assert list(block.failures) == ["no_score"] + first + [other_codes_key(51)]
    assert block.failures["no_score"] == 3 and block.failures[other_codes_key(51)] == 51
    assert sum(block.failures.values()) == block.overall.n_failed == 103
    assert len(other_codes_key(51)) > ERROR_CODE_CHARS  # no code a count keeps reads as it
    assert cut_codes_note(block.failures) == (
        " (codes over 64 characters, not written by judge-eval run, are cut in their middle at …, and marked (#…) "
        "where two would read alike; the codes after the 50 most frequent are counted together)")


def test_codes_are_labelled_once_over_every_test():
    """Code ``one`` fails only in the Zero-Shot test, ``two`` (cut alike) only in the Standard test: each test shows
    its code marked, as the all-test count does, never the bare cut standing for one code here and the other there."""
    one, two = "x" * 2500 + "1" + "x" * 2499, "x" * 2500 + "2" + "x" * 2499
    table = _failed_table([one, two])
    table = dataclasses.replace(table, split=np.array(["zero_shot", "standard"] * 2 + ["zero_shot", "standard"],
                                                      dtype=object))
    splits = Metrics.from_json(json.loads(item_table.dumps(item_table.evaluate(table, n_boot=0, vc_repeats=1)))).splits
    cut = "x" * 43 + "…" + "x" * 20
    assert splits["zero_shot"].failures == {f"{cut} (#{_mark(one)})": 1}
    assert splits["standard"].failures == {f"{cut} (#{_mark(two)})": 1}
    assert splits["all"].failures == {f"{cut} (#{_mark(one)})": 1, f"{cut} (#{_mark(two)})": 1}


def test_a_code_of_the_cut_shape_only_is_noted_as_cut():
    """The note reads the cut's shape: 64 characters with "…" at the 44th (where a cut at 64 puts it), marked or not.
    A 64-character code with "…" elsewhere, or a shorter one, was written whole: no note."""
    shaped = "a" * 43 + "…" + "b" * 20
    assert cut_codes_note([shaped]) != "" and cut_codes_note([f"{shaped} (#0123abcd)"]) != ""
    assert cut_codes_note(["a" * 42 + "…" + "b" * 21]) == ""
    assert cut_codes_note(["a…b", "no_score"]) == ""


def test_the_counting_rule_is_its_own_module_below_scoring_and_pairwise():
    """The scoring and the pairwise metrics count failures with ``eval.scoring.error_codes``, not through the reports
    (which read their counts): item_table imports no ``eval.reports`` module, pairwise's module level none of
    ``eval.reports.names``; and the rule is not left behind in ``eval.reports.names`` under its old names."""
    import ast
    import inspect

    from eval.pairwise import metrics as pairwise_metrics
    from eval.scoring import error_codes

    def imported(module) -> set[str]:
        tree = ast.parse(inspect.getsource(module))
        return {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}

    def imported_at_top(module) -> set[str]:
        return {node.module for node in ast.parse(inspect.getsource(module)).body
                if isinstance(node, ast.ImportFrom) and node.module}

    assert not {m for m in imported(item_table) if m.startswith("eval.reports")}
    # Pairwise's page writers borrow the reports' name cut inside their own functions; its counting imports none.
    assert "eval.reports.names" not in imported_at_top(pairwise_metrics)
    assert pairwise_metrics.code_counts is error_codes.code_counts
    assert {"eval.scoring.error_codes"} <= imported(item_table) & imported(pairwise_metrics)
    moved = ("ERROR_CODE_CHARS", "FAILURE_CODES_KEPT", "code_counts", "cut_codes_note", "other_codes_key")
    assert [name for name in moved if hasattr(names, name)] == []
    assert all(name in error_codes.__all__ for name in moved)


def test_short_codes_are_left_as_they_are():
    """Every code a judging run writes is under 64 characters: counted as written, and no note."""
    result = item_table.evaluate(_failed_table(["no_score", "request_failed", "no_score"]), n_boot=0, vc_repeats=1)
    failures = Metrics.from_json(json.loads(item_table.dumps(result))).splits["standard"].failures
    assert failures == {"no_score": 2, "request_failed": 1} and cut_codes_note(failures) == ""


# ------------------------------------------------------------------------------------------- validity tables


def _validity_texts() -> tuple[str, str]:
    """report.md's validity lead and section, and report.html's validity section, of one 5,000-character criterion
    on 12 items."""
    from types import SimpleNamespace

    from eval.reports.report import markdown_table, md_text
    from eval.validity.render import html_blocks, lead_lines, markdown_lines
    from judge.metrics_json.validity import AltTestSettings, SectionSettings, Validity
    from tests.support.validity_tables import item_table as table_of, split_section

    n = 12
    experts = np.stack([np.arange(n) % 3.0] * 2, axis=1)
    block = split_section(table_of(experts[:, 0], experts, low=np.zeros(n), high=np.full(n, 2.0),
                                   criteria=[LONG] * n))
    assert list(block.by_criterion) == [LONG]
    settings = SectionSettings(AltTestSettings(), 0, 0, 0, 0.95, "mode", bootstrap_unit="item",
                               ceiling_failures="worst")
    result = SimpleNamespace(validity=Validity(settings, False, {"standard": block}))
    markdown = "\n".join(lead_lines(result) + markdown_lines(result, markdown_table, md_text))
    page = "".join(html_blocks(result, lambda value: str(value)))
    return markdown, page


def test_validity_by_criterion_cuts_a_long_criterion_name():
    """A 5,000-character criterion: its row in report.md's and report.html's validity-by-criterion table shows the
    300-character cut, never the whole name."""
    for text in _validity_texts():
        assert "К" * 301 not in text and LONG_SHOWN in text


def test_validity_points_to_the_documentation_not_a_bare_path():
    """A run folder's reader cannot open "docs/validity.md" beside the report: report.md's and report.html's validity
    sections name the documentation's page and where the file lives (HTML-escaped in the page), and neither says
    only the bare path."""
    markdown, page = _validity_texts()
    guide = ("How to read these figures: the Validity page of the pollux-judge documentation "
             "(docs/validity.md in the pollux-judge repository).")
    assert guide in markdown and html.escape(guide) in page
    for text in (markdown, page):
        assert "How to read these figures: docs/validity.md." not in text


# ------------------------------------------------------------------------------------------- ranking pages


def test_ranking_page_cuts_a_long_criterion_name_in_its_row_and_tooltips():
    """One criterion of 5,000 characters on two instructions: the matrix's row, margin and tooltips hold its
    300-character cut, never 301 of its characters."""
    from eval.ranking.items import RankedItem
    from eval.ranking.matrix import pollux_matrix
    from eval.ranking.report import render_ranking_page

    items = [RankedItem(1, "m", LONG, (0, 1, 2), 1.0), RankedItem(2, "m", LONG, (0, 1, 2), 1.0)]
    matrix = pollux_matrix(items, normalize="minmax", n_boot=0).to_json()
    counts = {"n_instructions": 2, "n_items": 2, "n_no_prediction": 0}
    page = html.unescape(render_ranking_page({"model": LONG, "judge": "j", "data": "d", "counts": counts,
                                              "matrix": matrix}))
    assert "К" * 301 not in page
    assert f"<td>{LONG_SHOWN}</td>" in page and f'title="{LONG_SHOWN} × m: ' in page


def test_ranking_compare_page_cuts_a_long_criterion_name(tmp_path):
    """The same on compare's page: B - A per cell, its row and tooltip cut."""
    from eval.ranking.compare import compare_rankings
    from eval.ranking.report import render_ranking_compare_page
    from tests.support.eval_ranking import write_rank_run

    scale = "0: плохо\n\n1: средне\n\n2: хорошо"
    a = write_rank_run(tmp_path / "a", "A", [(p, "m", LONG, scale, 0.0) for p in range(1, 5)])
    b = write_rank_run(tmp_path / "b", "B", [(p, "m", LONG, scale, 2.0) for p in range(1, 5)])
    page = html.unescape(render_ranking_compare_page(compare_rankings(a, b, n_boot=50, seed=0)))
    assert "К" * 301 not in page
    assert f"<td>{LONG_SHOWN}</td>" in page and f'title="{LONG_SHOWN} × m: A ' in page


# ------------------------------------------------------------------------------------------- plots


def _metrics(criteria=("c1", "c2", "c3", "c4")) -> dict:
    """metrics.json's object of 60 items over two tests (and all), three task groups and ``criteria``."""
    return json.loads(item_table.dumps(sixty_item_metrics(criteria)))


def test_an_interval_a_float_step_off_its_mae_still_draws(tmp_path):
    """Six items of |d| 0.1: MAE 0.09999999999999999 and a bootstrap interval of [0.10000000000000002] twice, its
    low end above the MAE. matplotlib refuses a negative error bar (ValueError, after report.html was written): the
    bar is drawn with no whisker below, and the PNG is written."""
    from eval.reports.plots import plot_mae_by_criterion

    data = _metrics()
    assert sum([0.1] * 6) / 6 == 0.09999999999999999  # the MAE as a mean of six 0.1s comes out
    for block in data["splits"].values():
        for cell in block["by_criterion"].values():
            cell["mae"], cell["mae_ci"] = 0.09999999999999999, [0.10000000000000002, 0.10000000000000002]
    written = plot_mae_by_criterion(Metrics.from_json(data), tmp_path)
    assert [p.name for p in written] == [f"mae_by_criterion_{s}.png" for s in ("zero_shot", "standard", "all")]
    assert all(Image.open(p).size[0] > 100 for p in written)


def test_two_names_differing_at_their_end_keep_different_labels():
    """Two 68-character criteria ending "(часть A)" and "(часть B)": cut to the PNG bar's 48 characters and the
    SVG's 55 they keep their ends (the first 32 / 36, "…", the last 15 / 17), so the two labels differ; a cut to the
    first 47 read as one."""
    from eval.reports import html_report, plots

    stem = "Соответствие ответа требованиям инструкции и стилю текстов "
    one, two = stem + "(часть A)", stem + "(часть B)"
    assert len(one) == len(two) == 68
    png = shown_names([one, two], plots._BAR_LABEL_CHARS)
    assert png == {one: one[:32] + "…" + "кстов (часть A)", two: two[:32] + "…" + "кстов (часть B)"}
    assert png[one] != png[two] and png[one].endswith("(часть A)")
    data = _metrics(criteria=(one, two, "c3", "c4"))
    page = html_report._mae_svg(Metrics.from_json(data).splits["all"].by_criterion, "mode")
    assert f">{one[:37]}…{one[-17:]}</text>" in page and f">{two[:37]}…{two[-17:]}</text>" in page


def test_a_rescore_leaves_no_plot_of_the_earlier_one(tmp_path):
    """A first scoring draws three tests; a second with only the Standard test removes the Zero-Shot and all-test
    PNGs of both kinds (they would read as this scoring's), keeps files that are not its plots (confusion_mine.png
    among them), and leaves no
    temporary file beside the PNGs it wrote."""
    from eval.reports.plots import write_plots

    folder = tmp_path / "plots"
    data = _metrics()
    first = write_plots(Metrics.from_json(data), folder)
    assert len(first) == 6
    (folder / "mine.png").write_bytes(b"kept")
    (folder / "confusion_mine.png").write_bytes(b"kept")
    (folder / "notes.txt").write_text("kept", encoding="utf-8")
    data["splits"] = {"standard": data["splits"]["standard"]}
    second = write_plots(Metrics.from_json(data), folder)
    assert [p.name for p in second] == ["confusion_standard.png", "mae_by_criterion_standard.png"]
    assert sorted(p.name for p in folder.iterdir()) == ["confusion_mine.png", "confusion_standard.png",
                                                        "mae_by_criterion_standard.png", "mine.png", "notes.txt"]

