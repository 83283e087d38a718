"""What a scored run's tables alone would hide, said in report.md, report.html and the score command's console
summary alike: items with no prediction (an unfinished run) and why Spearman is "—"."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest

import judge
from eval.cli import main
from eval.reports.report import why_no_spearman
from judge.metrics_json.metrics import Cell

NAN = float("nan")


def _records() -> list:
    """12 sample records, 6 per test."""
    records = judge.load_records(judge.sample_data_path())
    return ([r for r in records if judge.split_of(r) == "zero_shot"][:6]
            + [r for r in records if judge.split_of(r) == "standard"][:6])


def _write_run(folder: Path, records, score) -> Path:
    """A run folder whose predictions give each record ``score(record)``."""
    folder.mkdir(parents=True)
    lines = [json.dumps({"id": r.id, "judge": "j", "raw_output": f"[FEEDBACK] ok [RESULT] {score(r)} [END]",
                         "feedback": "ok", "score": score(r), "parse_ok": True, "error": None, "reason": "",
                         "score_source": "verdict", "latency_s": 0.1}) for r in records]
    (folder / "predictions.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


def _score(run: Path, data: Path) -> None:
    assert main(["score", "--predictions", str(run), "--data", str(data), "--n-boot", "0", "--vc-repeats", "5",
                 "--no-plots"]) == 0


def test_unfinished_run_says_so_in_the_console_and_the_page(tmp_path, capsys):
    """Predictions for 8 of 12 items: the console summary and report.html say that 4 items have no prediction, as
    report.md does."""
    records = _records()
    data = judge.write_jsonl(records, tmp_path / "data.jsonl")
    run = _write_run(tmp_path / "run", records[:8], lambda r: max(r.expert_scores))
    _score(run, data)
    said = "4 items have no prediction (the run is unfinished): they are not in n."
    assert said in capsys.readouterr().out
    page = (run / "report.html").read_text(encoding="utf-8")
    assert "<b>4 items have no prediction</b> (the run is unfinished): they are not in <code>n</code>." in page
    assert "**4 items have no prediction** (the run is unfinished)" in (run / "report.md").read_text(encoding="utf-8")


def test_constant_judge_says_why_spearman_is_undefined(tmp_path, capsys):
    """A judge that scores 0 everywhere has no Spearman; report.md, report.html and the console say that it gave
    every scored item the same score, per test and in each by-model and by-task-type table."""
    records = _records()
    data = judge.write_jsonl(records, tmp_path / "data.jsonl")
    run = _write_run(tmp_path / "run", records, lambda r: 0)
    _score(run, data)
    metrics = json.loads((run / "metrics.json").read_text(encoding="utf-8"))
    n_scored = metrics["splits"]["standard"]["overall"]["n_scored"]
    assert metrics["splits"]["standard"]["overall"]["spearman"] is None and n_scored >= 2
    reason = (f"Spearman —: the judge gave all {n_scored} scored items the same level (0) of the confusion matrix, "
              "and a rank correlation needs the judge's scores to vary")
    markdown = (run / "report.md").read_text(encoding="utf-8")
    assert f"- **Standard test**: {reason}." in markdown
    by_model = markdown.split("### Standard test: by evaluated model")[1].split("###")[0]
    assert re.search(r"- \*\*[^*]+\*\*: Spearman —: the judge gave all \d+ scored items the same level \(0\)",
                     by_model)
    assert reason in html.unescape((run / "report.html").read_text(encoding="utf-8"))
    assert reason in capsys.readouterr().out


@pytest.mark.parametrize("cell, judge_score, expected", [
    (dict(n_scored=5, spearman=0.4), None, ""),  # defined: nothing to explain
    (dict(n_scored=5, spearman=NAN), None, "the judge's scores or the experts' reference take one value over all 5"),
    (dict(n_scored=5, spearman=NAN), 2.0, "the judge gave all 5 scored items the same level (2)"),
    (dict(n_scored=1, spearman=NAN), None, "one scored item: a rank correlation needs two or more"),
    (dict(n_scored=5, n_spearman=0, spearman=NAN), None, "no scored item has a defined reference"),
    (dict(n_scored=0, spearman=NAN, why_empty_text="no prediction"), None, ""),  # the cell's own reason says it
    (dict(n_scored=5), None, ""),  # a by-criterion cell: no correlations pooled there
])
def test_why_no_spearman(cell, judge_score, expected):
    """Each way Spearman can be undefined has its sentence, and only an undefined one is explained."""
    typed = Cell(n=5, n_failed=0, n_no_unique_mode=0, mae=0.5, mae_ci=(NAN, NAN), **cell)
    reason = why_no_spearman(typed, judge_score)
    assert reason.startswith(expected) if expected else reason == ""


_FORGED = "evil\n\n## Fake heading <img src=x onerror=alert(1)>"


def test_why_lines_keep_a_label_inert():
    """A criterion name is the data's: in report.md's list under a table it stays on its line, starts no heading
    and carries no live HTML."""
    from eval.reports.report import _why_lines

    lines = _why_lines([(_FORGED, "s")])
    assert not any(line.startswith("## ") for line in lines) and "<img" not in "\n".join(lines)
    assert lines[0].startswith("- **evil ")


def test_report_md_escapes_names_from_the_data_and_the_judge(tmp_path):
    """The judge's --name and the criterion, model and task names reach report.md as text: the title stays one
    line, no line is a forged heading or table row, no HTML tag, link or bidirectional control is left, and the
    tables keep their columns."""
    import dataclasses

    import numpy as np

    from eval.reports.report import md_text, render_markdown
    from eval.scoring import item_table, metrics

    n = 6
    table = item_table.ItemTable(
        ids=np.array([f"i{k}" for k in range(n)], dtype=object), judge=np.array([0, 1, 2, 1, 0, 2], dtype=float),
        status=np.array(["ok"] * n, dtype=object), error=np.array([""] * n, dtype=object),
        score_source=np.array(["verdict"] * n, dtype=object),
        experts=metrics.pad_scores([[0, 0], [1, 1], [2, 2], [1, 0], [0, 0], [2, 1]]),
        split=np.array(["standard"] * n, dtype=object), model_id=np.array(["m|x\u202e"] * n, dtype=object),
        task_type=np.array(["[t](javascript:alert(1))"] * n, dtype=object),
        task_group=np.array(["g"] * n, dtype=object),
        criteria_name=np.array([_FORGED, "# c2"] * 3, dtype=object), judge_name="j\n\n## Fake <b>bold</b>")
    result = item_table.evaluate(table, n_boot=0, vc_repeats=2)
    result = dataclasses.replace(result, judge="j\n\n## Fake <b>bold</b>")
    text = render_markdown(result)
    lines = text.splitlines()
    assert lines[0] == "# Judge report: j  ## Fake &lt;b&gt;bold&lt;/b&gt;"
    assert not any(line.startswith("## Fake") or line.startswith("# c2") for line in lines)
    assert "<img" not in text and "<b>" not in text and "[t](javascript" not in text and "\u202e" not in text
    # Every table keeps its columns: each row has its header's cells (no "|" of a name made one of its own).
    tables = re.findall(r"(?m)(?:^\|.*\|$\n?)+", text)
    assert any("m&#124;x" in block for block in tables)
    for block in tables:
        rows = [line for line in block.splitlines() if not line.startswith("|---")]
        assert len({len(re.split(r"(?<!\\)\|", line)) for line in rows}) == 1, block
    assert md_text("  1. x") == "1\\. x" and md_text("- x") == "\\- x"
