"""`judge-eval score` on data with an expert score off its rubric's scale (a 7 on a 0..2 criterion): the load counts
and names such records (``judge.records.LoadReport.n_off_scale``), and the score carries the count and the places
into metrics.json's notes and says it in report.md, report.html and the console summary, scoring the items as
given (``eval.reports.notes.off_scale_note``); exact duplicate rows the load left out are said the same way. And a
bad row of the data stops the score with the loader's one line naming it as an editor numbers it (blank lines
counted), exit code 2, no traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq

import judge
from eval.cli import main
from eval.judging.predictions import record_content_key
from eval.reports.notes import duplicates_note, off_scale_note
from judge.metrics_json.metrics import Metrics, Notes, Settings


def _records() -> list:
    """8 sample records, 4 per test, each on the 0..2 scale (0 1 2 rubrics) with experts who agree."""
    records = judge.load_records(judge.sample_data_path())
    return ([r for r in records if judge.split_of(r) == "zero_shot"][:4]
            + [r for r in records if judge.split_of(r) == "standard"][:4])


def _write_run(folder: Path, records) -> Path:
    """A run folder whose predictions give each record the score 1, keyed to its text as `run` writes."""
    folder.mkdir(parents=True)
    rows = [{"id": r.id, "judge": "j", "raw_output": "[FEEDBACK] ok [RESULT] 1 [END]", "feedback": "ok", "score": 1,
             "parse_ok": True, "error": None, "reason": "", "score_source": "verdict", "latency_s": 0.1,
             "content_key": record_content_key(r)} for r in records]
    (folder / "predictions.jsonl").write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows),
                                              encoding="utf-8")
    return folder


def _score(run: Path, data: Path, out: Path) -> int:
    return main(["score", "--predictions", str(run), "--data", str(data), "--out", str(out), "--n-boot", "0",
                 "--vc-repeats", "5", "--no-plots"])


def _jsonl_with_blank_line(tmp_path: Path, records, edit) -> Path:
    """``records`` as JSONL with a blank line 2, so the second record is on line 3; ``edit(i, row)`` changes row i."""
    path = judge.write_jsonl(records, tmp_path / "clean.jsonl")
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    for i, row in enumerate(rows):
        edit(i, row)
    lines = [json.dumps(row, ensure_ascii=False) for row in rows]
    data = tmp_path / "data.jsonl"
    data.write_text("\n".join(lines[:1] + [""] + lines[1:]) + "\n", encoding="utf-8")
    return data


def test_an_off_scale_expert_score_is_named_in_metrics_and_reports(tmp_path, capsys):
    """The second record (line 3, after a blank line 2) has an expert score of 7 on its 0..2 criterion: metrics.json
    notes 1 record off scale at "line 3", reading back typed; report.md, report.html and the console say it in one
    sentence; the item is scored as given (its reference is the 7 written, so MAE counts it): the paper, Section 2.2,
    says "All criteria are equipped with corresponding scale and rubrics" and nothing of scores off them, so the
    toolkit neither clips nor drops one, and says so."""
    records = _records()
    assert all(max(r.expert_scores) <= 2 and min(r.expert_scores) >= 0 for r in records)
    run = _write_run(tmp_path / "run", records)

    def seven(i, row):
        if i == 1:
            row["expert_scores"] = [7.0] * len(row["expert_scores"])
            row["criteria_score"] = 7.0

    data = _jsonl_with_blank_line(tmp_path, records, seven)
    assert _score(run, data, tmp_path / "out") == 0
    written = json.loads((tmp_path / "out" / "metrics.json").read_text(encoding="utf-8"))
    assert written["notes"]["n_off_scale"] == 1
    assert written["notes"]["off_scale_rows"] == ["line 3"]
    assert Metrics.from_json(written).notes.off_scale_rows == ["line 3"]
    sentence = "1 item has an expert score or `criteria_score` off its rubric's scale** (line 3): scored as given."
    assert "**" + sentence in (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    html = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    assert ("<b>1 item has an expert score or <code>criteria_score</code> off its rubric&#x27;s scale</b> (line 3): "
            "scored as given.") in html
    console = capsys.readouterr().out
    assert "1 item has an expert score or criteria_score off its rubric's scale (line 3): scored as given." in console
    # Scored as given: the item's reference is the 7 the data gives, not dropped nor clipped to the scale
    items = pq.read_table(tmp_path / "out" / "items.parquet")
    reference = dict(zip(items.column("id").to_pylist(), items.column("reference").to_pylist()))
    assert reference[records[1].id] == 7.0


def test_clean_data_writes_no_off_scale_note(tmp_path):
    """Every score on its scale: no off-scale key in metrics.json's notes (the file's bytes as before) and no
    sentence in report.md."""
    records = _records()
    run = _write_run(tmp_path / "run", records)
    data = _jsonl_with_blank_line(tmp_path, records, lambda i, row: None)
    assert _score(run, data, tmp_path / "out") == 0
    notes = json.loads((tmp_path / "out" / "metrics.json").read_text(encoding="utf-8"))["notes"]
    assert not {"n_off_scale", "off_scale_rows", "n_duplicate_rows", "duplicate_rows"} & set(notes)
    assert "scored as given" not in (tmp_path / "out" / "report.md").read_text(encoding="utf-8")


def test_an_off_scale_aggregate_in_a_parquet_file_is_named_by_its_row_index(tmp_path):
    """A Parquet file whose row at index 2 has experts on the scale but a `criteria_score` of -3: metrics.json names
    "row index 2" (a table's 0-based index, as the loader names it) and report.md says it."""
    import pandas as pd

    records = _records()
    run = _write_run(tmp_path / "run", records)
    rows = [json.loads(line) for line in judge.write_jsonl(records, tmp_path / "clean.jsonl").read_text(
        encoding="utf-8").splitlines()]
    rows[2]["criteria_score"] = -3.0
    pd.DataFrame(rows).to_parquet(tmp_path / "data.parquet")
    assert _score(run, tmp_path / "data.parquet", tmp_path / "out") == 0
    notes = json.loads((tmp_path / "out" / "metrics.json").read_text(encoding="utf-8"))["notes"]
    assert (notes["n_off_scale"], notes["off_scale_rows"]) == (1, ["row index 2"])
    assert "off its rubric's scale** (row index 2): scored as given." in (tmp_path / "out" / "report.md").read_text(
        encoding="utf-8")


def test_exact_duplicate_rows_left_out_are_named_in_metrics_and_report(tmp_path):
    """The first record repeated on line 10 (after the blank line 2 and 7 more records): the load keeps one copy;
    metrics.json's notes say 1 duplicate row, "line 10 = line 1", and report.md says it was left out, so the data's
    9 rows against the report's n 8 are accounted for."""
    records = _records()
    run = _write_run(tmp_path / "run", records)
    data = _jsonl_with_blank_line(tmp_path, records, lambda i, row: None)
    lines = data.read_text(encoding="utf-8").splitlines()
    data.write_text("\n".join(lines + lines[:1]) + "\n", encoding="utf-8")
    assert _score(run, data, tmp_path / "out") == 0
    written = json.loads((tmp_path / "out" / "metrics.json").read_text(encoding="utf-8"))
    assert written["splits"]["all"]["overall"]["n"] == 8
    assert (written["notes"]["n_duplicate_rows"], written["notes"]["duplicate_rows"]) == (1, ["line 10 = line 1"])
    assert ("**1 exact duplicate row of the data was left out** (line 10 = line 1): each item is scored once."
            in (tmp_path / "out" / "report.md").read_text(encoding="utf-8"))


def _metrics(notes: Notes) -> Metrics:
    return Metrics(judge="j", target="mode", settings=Settings(n_boot=0, seed=0, vc_repeats=1, ci_level=0.95),
                   splits={}, notes=notes)


def test_the_sentence_ends_in_an_ellipsis_when_the_file_names_fewer_than_counted():
    """23 records off scale, the load names the first 20: the sentence lists those and "…"; one named by a shard
    with a backtick in its name goes in a code span without it (report.md and report.html show it as it is)."""
    places = [f"line {k}" for k in range(2, 22)]
    note = off_scale_note(_metrics(Notes(n_off_scale=23, off_scale_rows=places)))
    assert note == ("**23 items have an expert score or `criteria_score` off their rubric's scale** (line 2, line 3, "
                    "line 4, line 5, line 6, line 7, line 8, line 9, line 10, line 11, line 12, line 13, line 14, "
                    "line 15, line 16, line 17, line 18, line 19, line 20, line 21, …): scored as given.")
    odd = off_scale_note(_metrics(Notes(n_off_scale=1, off_scale_rows=["a`b*.parquet: row index 1"])))
    assert odd == ("**1 item has an expert score or `criteria_score` off its rubric's scale** "
                   "(`a'b*.parquet: row index 1`): scored as given.")
    assert off_scale_note(_metrics(Notes())) is None
    odd_pair = ["x`y.parquet: row index 4 = row index 1"]
    three = duplicates_note(_metrics(Notes(n_duplicate_rows=3, duplicate_rows=odd_pair)))
    assert three == ("**3 exact duplicate rows of the data were left out** (`x'y.parquet: row index 4` = row index 1, "
                     "…): each item is scored once.")


def test_a_bad_row_after_a_blank_line_is_one_line_naming_it(tmp_path, capsys):
    """Line 2 blank, the record on line 4 without its `instruction`: `judge-eval score` exits 2 (the documented
    input error) with one line on stderr naming "line 4" and the field, and no traceback."""
    records = _records()
    run = _write_run(tmp_path / "run", records)
    data = _jsonl_with_blank_line(tmp_path, records, lambda i, row: row.pop("instruction") if i == 2 else None)
    assert _score(run, data, tmp_path / "out") == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.startswith("judge-eval score: error:")]
    assert len(lines) == 1 and "line 4" in lines[0] and "instruction" in lines[0], err
    assert not (tmp_path / "out").exists()


def test_a_row_that_is_not_json_after_a_blank_line_is_one_line_naming_it(tmp_path, capsys):
    """A row cut mid-object on line 3 (after blank line 2): exit 2, one line naming line 3, no traceback."""
    records = _records()
    run = _write_run(tmp_path / "run", records)
    data = _jsonl_with_blank_line(tmp_path, records, lambda i, row: None)
    lines = data.read_text(encoding="utf-8").splitlines()
    lines[2] = lines[2][:40]
    data.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert _score(run, data, tmp_path / "out") == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    errors = [line for line in err.splitlines() if line.startswith("judge-eval score: error:")]
    assert len(errors) == 1 and "line 3" in errors[0], err


def test_score_reads_the_judges_scores_against_the_scale_once(tmp_path, monkeypatch):
    """The confusion matrices and the validity section read one reading of the table's scale ends
    (``eval.validity.scale_reading.read_scales``): the ends are assembled once per score, where each read them."""
    import eval.validity.ceiling as ceiling

    calls = []
    scale_ends = ceiling.scale_ends

    def counted(*args, **kwargs):
        calls.append(1)
        return scale_ends(*args, **kwargs)

    monkeypatch.setattr(ceiling, "scale_ends", counted)
    records = _records()
    run = _write_run(tmp_path / "run", records)
    data = _jsonl_with_blank_line(tmp_path, records, lambda i, row: None)
    assert _score(run, data, tmp_path / "out") == 0
    assert len(calls) == 1
