"""``judge-eval compare``'s compare.md with names that are Markdown: run names and the data's labels are inert text."""

from __future__ import annotations

import json
import re

from eval.scoring import item_table
from tests.unit.test_eval_metrics import _table

# A judge's --name can hold anything: a table pipe, emphasis, a heading on a line of its own, a tag.
HOSTILE_A = "base | one\n# two"
HOSTILE_B = "*bold* <b>x</b> | c"


def _named_run(folder, name, judge, experts, models):
    """A scored run folder (items.parquet and metrics.json as ``judge-eval score`` writes them) whose judge is
    ``name`` and whose evaluated models are ``models``."""
    from eval.scoring.item_table import derive, dumps, evaluate

    table = _table(judge, ["ok"] * len(judge), experts, models=models)
    derived = derive(table, "mode")
    result = json.loads(dumps(evaluate(table, target="mode", n_boot=50, derived=derived)))
    result["judge"] = name
    folder.mkdir()
    item_table.write_table(table, folder / "items.parquet", extra={"reference": derived.reference,
                                                                    "vc_judge": derived.vc_judge,
                                                                    "vc_experts": derived.vc_experts})
    (folder / "metrics.json").write_text(json.dumps(result), encoding="utf-8")
    return folder


def _cells(line: str) -> list[str]:
    """A Markdown table row's cells, split on its unescaped pipes."""
    return re.split(r"(?<!\\)\|", line.strip().strip("|"))


def test_compare_markdown_keeps_hostile_run_and_model_names_inert(tmp_path):
    """Run names with ``|``, ``*``, ``#``, ``<`` and a line break, and an evaluated model named with a pipe, leave
    every table with its own number of columns, start no heading, tag or emphasis, and still name both runs."""
    from eval.scoring.compare import compare, render_markdown

    experts = [[0, 0, 1], [1, 1, 2]] * 3
    models = ["m|x", "m|x", "n*", "n*", "<i>", "<i>"]
    a = _named_run(tmp_path / "A", HOSTILE_A, [1.0, 2.0] * 3, experts, models)
    b = _named_run(tmp_path / "B", HOSTILE_B, [0.0, 1.0] * 3, experts, models)
    result = compare([a, b], n_boot=50)
    assert result.runs == [HOSTILE_A, HOSTILE_B]  # compare.json keeps the names as they are
    text = render_markdown(result)

    assert "<b>" not in text and "<i>" not in text and "*bold*" not in text
    assert not any(line.startswith("# two") for line in text.splitlines())  # the name's line break made no heading
    headings = [line for line in text.splitlines() if line.startswith("#")]
    assert headings[0] == "# Judge comparison (baseline: base &#124; one # two)"
    assert "## \\*bold\\* &lt;b&gt;x&lt;/b&gt; &#124; c vs base &#124; one # two" in headings
    tables, current = [], []
    for line in text.splitlines() + [""]:
        if line.startswith("|"):
            current.append(line)
        elif current:
            tables, current = tables + [current], []
    assert tables
    for table in tables:  # a pipe in a name opened no column of its own: every row as wide as its header
        assert {len(_cells(line)) for line in table} == {len(_cells(table[0]))}, table
    table_lines = [line for table in tables for line in table]
    header = _cells(next(line for line in table_lines if "Metric" in line))
    assert [cell.strip() for cell in header] == ["Test", "Metric", "base &#124; one # two",
                                                 "\\*bold\\* &lt;b&gt;x&lt;/b&gt; &#124; c"]
    assert any(_cells(line)[0].strip() == "m&#124;x" for line in table_lines)


def test_compare_markdown_tells_apart_names_that_escape_alike(tmp_path):
    """Two judge names apart only by a line break ("a\\nb", "a b") read alike once on one line: each column and
    heading is told apart by its run's folder, as ``compare`` tells apart equal names."""
    from eval.scoring.compare import compare, render_markdown

    experts = [[0, 0, 1], [1, 1, 2]]
    a = _named_run(tmp_path / "first", "a\nb", [1.0, 2.0], experts, None)
    b = _named_run(tmp_path / "second", "a b", [0.0, 1.0], experts, None)
    text = render_markdown(compare([a, b], n_boot=50))
    assert "# Judge comparison (baseline: a b (first))" in text
    assert "## a b (second) vs a b (first)" in text


def test_ranking_compare_markdown_keeps_hostile_model_names_inert():
    """Two rank runs' compare.md: candidate models, the judge, a criterion and a meta named with ``|``, ``*``, ``#``,
    ``<`` and a line break make no heading line, column, emphasis or tag of their own."""
    from eval.ranking.compare import render_ranking_compare_markdown

    cell = {"delta": 0.5, "ci": [0.1, 0.9], "p_value": 1 / 64, "verdict": "B higher"}
    result = {"a": {"model": HOSTILE_A, "excluded": {}, "n_instructions": 1, "empty_answers": []},
              "b": {"model": HOSTILE_B, "excluded": {}, "n_instructions": 1, "empty_answers": []},
              "rows": ["*crit*"], "columns": ["<i>meta</i>"], "cells": {"*crit*": {"<i>meta</i>": cell}},
              "n_instructions": 1, "judge": "judge | <b>", "n_boot": 10, "alpha": 0.05, "empty_answer": "zero"}
    lines = render_ranking_compare_markdown(result).splitlines()
    assert lines[0] == ("# \\*bold\\* &lt;b&gt;x&lt;/b&gt; &#124; c (B) vs base &#124; one # two (A): POLLUX matrix, "
                        "B − A")
    assert "judge judge &#124; &lt;b&gt;;" in lines[2]
    assert [line for line in lines if line.startswith("#")] == [lines[0]]
    table = [line for line in lines if line.startswith("|")]
    assert table[0] == "| criteria_name | &lt;i&gt;meta&lt;/i&gt; |"
    assert table[2] == "| \\*crit\\* | +0.500 [+0.100, +0.900] p 0.0156 **B higher** |"


def test_names_told_apart_by_folder_never_meet_another_runs_name():
    """A name given its folder can equal a third run's name, and two folders can share their last part: the names
    are then told apart by the whole path, and failing that by position, so no column stands for two runs."""
    from eval.reports.report import md_text
    from eval.scoring.compare import distinct_names

    shown = distinct_names([md_text(n) for n in ["x", "x ", "x (f1)"]], ["r/f1", "r/f2", "r/f3"], md_text)
    assert len(set(shown)) == 3, shown
    shown = distinct_names([md_text(n) for n in ["j", "j\n"]], ["a/run", "b/run"], md_text)
    assert len(set(shown)) == 2 and all("run" in name for name in shown), shown
    assert distinct_names(["a", "b"], ["f", "g"]) == ["a", "b"]  # distinct names stay as they are
    assert distinct_names(["a", "a"], ["f", "f"]) == ["a (#1)", "a (#2)"]


def test_the_paired_overall_rows_are_named_in_the_words_of_the_other_tables(tmp_path):
    """compare.md's paired Overall table names its rows as the side-by-side table and compare.html's columns do
    ("MAE", "Spearman", "VC judge"), not by their metrics.json keys (``mae``, ``vc_judge``)."""
    from eval.reports.html_report import render_compare_page
    from eval.scoring.compare import compare, render_markdown

    experts = [[2, 2, 1], [1, 1, 0], [0, 0, 1], [2, 2, 2]] * 10
    models = ["m"] * 40
    a = _named_run(tmp_path / "A", "a", [2, 1, 0, 2] * 10, experts, models)
    b = _named_run(tmp_path / "B", "b", [1, 1, 1, 2] * 10, experts, models)
    result = compare([a, b], n_boot=50)
    text = render_markdown(result)
    overall = text.split("## b vs a", 1)[1].split("| Overall |", 1)[1].split("\n\n", 1)[0]
    rows = [_cells(line)[0].strip() for line in overall.splitlines()[2:]]
    assert rows == ["MAE", "Spearman", "VC judge"]
    page = render_compare_page(result, None)
    assert all(f"{word} baseline</th>" in page for word in rows)


def test_compare_markdown_cuts_long_run_names_and_lists_them_in_full(tmp_path):
    """A run named by a path of 200 characters (a --name or folder) is cut in every column header and heading of
    compare.md as the reports cut names (its start and end kept, "…" between), and the whole name is listed once
    under the first table, inert Markdown, its ``|`` escaped and its line break a space."""
    from eval.reports.report import md_text
    from eval.scoring.compare import MD_RUN_NAME_CHARS, compare, render_markdown

    experts = [[0, 0, 1], [1, 1, 2]] * 3
    long_a = "/scratch/" + "a" * 180 + "/run-one"
    long_b = "/scratch/" + "b" * 170 + "/run | two\nnext"
    assert len(long_a) > 190 and len(long_b) > 190
    a = _named_run(tmp_path / "A", long_a, [1.0, 2.0] * 3, experts, None)
    b = _named_run(tmp_path / "B", long_b, [0.0, 1.0] * 3, experts, None)
    result = compare([a, b], n_boot=50)
    assert result.runs == [long_a, long_b]  # compare.json keeps them whole
    text = render_markdown(result)
    table_lines = [line for line in text.splitlines() if line.startswith("|")]
    header = [cell.strip() for cell in _cells(next(line for line in table_lines if "Metric" in line))]
    shown_a, shown_b = header[2:]
    assert len(shown_a) <= MD_RUN_NAME_CHARS and shown_a.startswith("/scratch/aaa") and shown_a.endswith("/run-one")
    assert "…" in shown_a and "…" in shown_b and shown_b.endswith("two next")
    assert len(shown_b.replace("&#124;", "|")) <= MD_RUN_NAME_CHARS
    assert f"# Judge comparison (baseline: {shown_a})" in text and f"## {shown_b} vs {shown_a}" in text
    assert all(len(cell.strip()) < 120 for line in table_lines for cell in _cells(line))  # no name uncut in a table
    assert text.count(md_text(long_a)) == 1 and text.count(md_text(long_b)) == 1  # each whole, once
    full_list = text.split("Run names cut above, each in full:\n\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert full_list == [f"- {shown_a}: {md_text(long_a)}", f"- {shown_b}: {md_text(long_b)}"]
    assert "run &#124; two next" in full_list[1]


def test_compare_markdown_lists_no_names_when_none_was_cut(tmp_path):
    """Short names are written as they are, with no list of full names after the table."""
    from eval.scoring.compare import compare, render_markdown

    experts = [[0, 0, 1], [1, 1, 2]]
    a = _named_run(tmp_path / "A", "judge-a", [1.0, 2.0], experts, None)
    b = _named_run(tmp_path / "B", "judge-b", [0.0, 1.0], experts, None)
    text = render_markdown(compare([a, b], n_boot=50))
    assert "# Judge comparison (baseline: judge-a)" in text and "in full" not in text


def test_compare_markdown_tells_apart_names_cut_alike_within_the_cut_and_a_mark(tmp_path):
    """Two sweep runs named by 150-character paths that differ only in their middle, which the cut leaves out: each
    header is told apart by its folder's name, cut with it, or, where the folders' names are alike too, by the mark
    the pages give (" (#" and 8 hex digits of the full name's SHA-256), the same whichever run comes first. No label
    passes the cut and that mark (docs/security.md: a run's name is cut to 80 characters)."""
    import hashlib

    from eval.scoring.compare import MD_RUN_NAME_CHARS, compare, render_markdown

    experts = [[0, 0, 1], [1, 1, 2]] * 3
    start, end = "/scratch/sweep/" + "s" * 45, "e" * 50
    name_a, name_b = start + "lr-1e-5-" + "x" * 32 + end, start + "lr-2e-5-" + "y" * 32 + end
    assert len(name_a) == len(name_b) == 150
    most = MD_RUN_NAME_CHARS + len(" (#xxxxxxxx)")

    def headers(runs) -> list[str]:
        text = render_markdown(compare(runs, n_boot=50))
        line = next(line for line in text.splitlines() if line.startswith("|") and "Metric" in line)
        return [cell.strip() for cell in _cells(line)][2:]

    # folders apart by their names: the folder's name ends the cut label
    a = _named_run(tmp_path / "lr-1e-5", name_a, [1.0, 2.0] * 3, experts, None)
    b = _named_run(tmp_path / "lr-2e-5", name_b, [0.0, 1.0] * 3, experts, None)
    shown = headers([a, b])
    assert len(set(shown)) == 2 and all(len(label) <= MD_RUN_NAME_CHARS for label in shown), shown
    assert shown[0].endswith("(lr-1e-5)") and shown[1].endswith("(lr-2e-5)")

    # folders whose names are alike too: the mark, told by the name alone
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    a = _named_run(tmp_path / "one" / "eval", name_a, [1.0, 2.0] * 3, experts, None)
    b = _named_run(tmp_path / "two" / "eval", name_b, [0.0, 1.0] * 3, experts, None)
    shown = headers([a, b])
    marks = [f" (#{hashlib.sha256(name.encode()).hexdigest()[:8]})" for name in (name_a, name_b)]
    assert [label.endswith(mark) for label, mark in zip(shown, marks)] == [True, True], shown
    assert all(len(label) <= most for label in shown), shown
    assert headers([b, a]) == shown[::-1]
