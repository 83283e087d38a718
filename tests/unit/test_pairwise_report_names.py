"""A pairwise run's report.md and report.html write the judge's name as the other reports do (cut to
``eval.reports.names.NAME_CHARS`` characters, without bidirectional controls, markup inert) and report.html says
the failed judgments by code as report.md does."""

from __future__ import annotations

import json

from eval.pairwise.metrics import score_pairwise
from eval.reports.names import NAME_CHARS, shown_name
from tests.unit.test_pairwise_score_checks import PAIR, _row

# A right-to-left override, a name longer than a page shows, and markup that would close the page's <title>.
NAME = "judge\u202eeman" + "x" * 1000 + "</title><script>window.__pwned=1</script>"


def _scored(tmp_path):
    failed = {**_row("swapped", 1.0, NAME), "parse_ok": False, "score": None, "verdict": None, "error": "no_verdict"}
    data = tmp_path / "pairs.jsonl"
    data.write_text(json.dumps(PAIR) + "\n", encoding="utf-8")
    run = tmp_path / "pw"
    run.mkdir()
    rows = [_row("original", -1.0, NAME), failed]
    (run / "pairwise_predictions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    score_pairwise(run, data, n_boot=0)
    return (run / "report.md").read_text(encoding="utf-8"), (run / "report.html").read_text(encoding="utf-8")


def test_the_judges_name_is_cut_and_without_bidirectional_controls(tmp_path):
    markdown, page = _scored(tmp_path)
    cut = shown_name(NAME.replace("\u202e", ""))
    assert len(cut) == NAME_CHARS and "…" in cut
    for text in (markdown, page):
        assert "\u202e" not in text
        assert "x" * 700 not in text  # the name's middle is not written
    assert "<script>" not in page and "&lt;/title&gt;&lt;script&gt;" in page
    assert page.count(cut[:40]) == 2  # the title and the heading, each cut
    assert cut[:40] in markdown


def test_report_html_says_the_failed_judgments_by_code_as_report_md_does(tmp_path):
    markdown, page = _scored(tmp_path)
    assert "1 failed (`no_verdict`: 1)" in markdown
    assert "1 failed (<code>no_verdict</code>: 1)" in page
