"""Names that differ only by what the reports do not show (a bidirectional mark, a line break, a zero-width
character) still get labels that read differently: in ``shown_names``, compare.html's headline and explorer, and
report.md's rows."""

from __future__ import annotations

import html
import re
import unicodedata

from eval.reports.html_text import escape
from eval.reports.names import shown_names
from eval.reports.report import md_text
from tests.support.sixty_items import sixty_item_metrics
from tests.unit.test_compare_markdown_names import _named_run


def reads_as(text: str) -> str:
    """What a reader sees of written text: its entities as characters, without the characters that show as nothing
    (format characters), its whitespace one space."""
    seen = "".join(ch for ch in html.unescape(text) if unicodedata.category(ch) != "Cf" and ch.isprintable() or ch == " ")
    return " ".join(seen.split())


def test_names_apart_only_by_an_invisible_character_are_labelled_apart():
    """``modelA`` and ``model\\u200eA`` (a left-to-right mark, which escaping drops), ``model\\nA`` (a line break,
    which escaping makes a space, beside ``model A``) and ``model\\u200bA`` (a zero-width space) read alike once
    written: each is marked, and the written labels are all different."""
    names = ["modelA", "model\u200eA", "model\u200bA", "model A", "model\nA"]
    labels = shown_names(names)
    for write in (md_text, escape):
        written = [write(labels[name]) for name in names]
        assert len({reads_as(w) for w in written}) == len(names), written
    assert all(" (#" in labels[name] for name in names)
    assert "\u200e" not in labels["model\u200eA"] and "\n" not in labels["model\nA"]


def test_compare_html_tells_apart_runs_named_apart_only_by_a_bidi_mark(tmp_path):
    """Runs ``judge-A`` and ``judge-\\u200eA``: compare.html's headline says two different names (never "judge-A is
    worse than judge-A"), and its explorer's judges and filter values hold two different labels."""
    from eval.reports.html_explorer import compare_items
    from eval.reports.html_report import render_compare_page
    from eval.scoring.compare import compare

    experts = [[0, 0, 1], [1, 1, 2]] * 3
    models = ["m1", "m1", "m2", "m2", "m3", "m3"]
    a = _named_run(tmp_path / "A", "judge-A", [1.0, 2.0] * 3, experts, models)
    b = _named_run(tmp_path / "B", "judge-\u200eA", [0.0, 1.0] * 3, experts, models)
    result = compare([a, b], n_boot=50)
    items = compare_items(result)
    page = render_compare_page(result, items)

    base, run = re.search(r"Baseline: <b>(.*?)</b> · runs: <b>.*?</b>, <b>(.*?)</b>", page).groups()
    assert reads_as(base) != reads_as(run)
    assert f"{run} is" in page or f"{run} and" in page  # the decision names the run by its own label
    judges = [reads_as(j.split(": ", 1)[1]) for j in items["judges"]]
    assert len(set(judges)) == 2, items["judges"]
    for pair in items["filter_judges"]:  # the explorer's judge filter, per comparison
        assert len({reads_as(side.split(": ", 1)[1]) for side in pair}) == 2, pair


def test_report_md_rows_of_criteria_apart_only_by_a_bidi_mark_read_differently():
    """Half of one criterion's items named ``c1``, half ``c\\u200e1``: report.md's by-criterion table has two rows
    for them, labelled differently once rendered."""
    from eval.reports.report import render_markdown

    text = render_markdown(sixty_item_metrics(criteria=("c1", "c3", "c\u200e1", "c4")))
    tables = text.split("### ")[1:]
    by_criterion = [t for t in tables if t.split("\n", 1)[0].endswith("by criterion")]
    rows = [[line.split("|")[1].strip() for line in table.splitlines() if re.match(r"\| c.?1\b", line)]
            for table in by_criterion]
    assert [len(r) for r in rows] == [2, 0, 2]  # the Zero-Shot test holds both, so the two tests together do
    assert all(reads_as(r[0]) != reads_as(r[1]) for r in rows if r), rows


def test_report_md_cuts_the_judges_and_the_datas_names_as_report_html_does():
    """A 100,000-character judge name, evaluated model and criterion: report.md writes none of them past 300
    characters (the title, Table 10's rows and header, the by-model and by-criterion rows, the notes under them), and
    its longest line is its own prose's."""
    from eval.reports.report import render_markdown

    judge_name, model, criterion = "J" * 100_000, "M" * 100_000, "C" * 100_000
    text = render_markdown(sixty_item_metrics(criteria=(criterion, "c2", "c3", "c4"), judge_name=judge_name,
                                              models=(model, "m2")))
    assert text.splitlines()[0] == "# Judge report: " + "J" * 200 + "…" + "J" * 99
    assert "M" * 200 + "…" in text and "C" * 200 + "…" in text  # the names are there, cut
    assert not any(letter * 301 in text for letter in "JMC")
    short = render_markdown(sixty_item_metrics(models=("m1", "m2")))
    assert max(map(len, text.splitlines())) < max(map(len, short.splitlines())) + 1_000


def test_labels_apart_only_by_a_zero_width_character_do_not_read_apart():
    """``all_read_apart``: "run" and "ru\u200bn" show alike, so they are not apart; "run" and "run 2" are."""
    from eval.reports.names import all_read_apart

    assert not all_read_apart(["run", "ru\u200bn"])
    assert all_read_apart(["run", "run 2"]) and all_read_apart([])
