"""`judge-eval score` on data edited after the run: a prediction row keeps the ``content_key`` of the text it judged
(``eval.judging.predictions.record_content_key``); a row whose key is not its record's now judged a text no longer
there and counts as no prediction, said in a warning and in metrics.json, and a run all of whose rows are so is
refused (the pointwise twin of ``eval.pairwise.metrics``' check)."""

from __future__ import annotations

import dataclasses
import json
import logging
from pathlib import Path

import judge
from eval.cli import main
from eval.judging.predictions import record_content_key, read_prediction_table


def _records() -> list:
    """12 sample records, 6 per test."""
    records = judge.load_records(judge.sample_data_path())
    return ([r for r in records if judge.split_of(r) == "zero_shot"][:6]
            + [r for r in records if judge.split_of(r) == "standard"][:6])


def _write_run(folder: Path, records, keyed: bool = True) -> Path:
    """A run folder whose predictions give each record its largest expert score, keyed to its text as `run`
    writes (``keyed``) or as rows written before keys were kept."""
    folder.mkdir(parents=True)
    lines = []
    for r in records:
        row = {"id": r.id, "judge": "j", "raw_output": f"[FEEDBACK] ok [RESULT] {max(r.expert_scores)} [END]",
               "feedback": "ok", "score": max(r.expert_scores), "parse_ok": True, "error": None, "reason": "",
               "score_source": "verdict", "latency_s": 0.1}
        if keyed:
            row["content_key"] = record_content_key(r)
        lines.append(json.dumps(row, ensure_ascii=False))
    (folder / "predictions.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


def _edited(records, which) -> list:
    """The records with " (правка)" appended to the answers of the positions in ``which``."""
    return [dataclasses.replace(r, answer=r.answer + " (правка)") if i in which else r
            for i, r in enumerate(records)]


def _score(run: Path, data: Path, out: Path) -> int:
    return main(["score", "--predictions", str(run), "--data", str(data), "--out", str(out), "--n-boot", "0",
                 "--vc-repeats", "5", "--no-plots"])


def test_stale_rows_match_the_key_run_writes(tmp_path):
    """Rows of the unedited records are not stale (the whole sample, reference answers and all, as `run` keys it);
    after editing records 1 and 4, exactly those rows are."""
    from eval.scoring.score import stale_rows

    everything = judge.load_records(judge.sample_data_path())
    assert any(r.reference_answer for r in everything)
    whole, _ = judge.load_record_columns(judge.sample_data_path())
    assert not stale_rows(whole, read_prediction_table(_write_run(tmp_path / "all", everything))).any()
    records = _records()
    run = _write_run(tmp_path / "run", records)
    rows = read_prediction_table(run)
    edited, _ = judge.load_record_columns(judge.write_jsonl(_edited(records, {1, 4}), tmp_path / "edited.jsonl"))
    assert stale_rows(edited, rows).nonzero()[0].tolist() == [1, 4]


def test_some_edited_items_count_as_no_prediction(tmp_path, caplog):
    """3 of 12 answers edited after the run: those 3 items have no prediction (n 9, n_missing 3 overall), metrics.json's
    notes say 3 were stale, and report.md why, and the warning names the count and an edited item's id."""
    records = _records()
    run = _write_run(tmp_path / "run", records)
    data = judge.write_jsonl(_edited(records, {0, 5, 7}), tmp_path / "data.jsonl")
    with caplog.at_level(logging.WARNING, logger="judge_eval.score"):
        assert _score(run, data, tmp_path / "out") == 0
    metrics = json.loads((tmp_path / "out" / "metrics.json").read_text(encoding="utf-8"))
    overall = metrics["splits"]["all"]["overall"]
    assert (overall["n"], overall["n_missing"]) == (9, 3)
    assert metrics["notes"]["n_stale_predictions"] == 3
    # report.md says why those items have none: the data's edits, not an unfinished run
    report = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    assert "**3 items have no prediction** (3 judged a text since edited; rerun `judge-eval run`)" in report
    assert "the run is unfinished" not in report
    warning = next(r.getMessage() for r in caplog.records if "no longer has" in r.getMessage())
    assert warning.startswith("3 predictions") and repr(records[0].id) in warning


def test_every_item_edited_is_refused(tmp_path, capsys):
    """Every answer edited: exit 2, saying the data changed and to rerun `judge-eval run`; no report written."""
    records = _records()
    run = _write_run(tmp_path / "run", records)
    data = judge.write_jsonl(_edited(records, set(range(len(records)))), tmp_path / "data.jsonl")
    assert _score(run, data, tmp_path / "out") == 2
    err = capsys.readouterr().err
    assert "the data changed since the run" in err and "rerun `judge-eval run`" in err
    assert not (tmp_path / "out").exists()


def test_rows_without_a_key_are_scored_as_before(tmp_path):
    """Rows written before rows kept a key cannot be checked: scored, edited or not, and nothing said stale."""
    records = _records()
    run = _write_run(tmp_path / "run", records, keyed=False)
    data = judge.write_jsonl(_edited(records, set(range(len(records)))), tmp_path / "data.jsonl")
    assert _score(run, data, tmp_path / "out") == 0
    metrics = json.loads((tmp_path / "out" / "metrics.json").read_text(encoding="utf-8"))
    assert (metrics["splits"]["all"]["overall"]["n"], metrics["splits"]["all"]["overall"]["n_missing"]) == (12, 0)
    assert "n_stale_predictions" not in metrics["notes"]


def test_the_stale_filter_looks_ids_up_by_one_join(tmp_path, monkeypatch):
    """Whether any row left is of a record is asked of Arrow's join over the id column, as ``stale_rows`` asks it,
    not by a lookup per id (which builds a dict of every record's id): the rows and count are the same."""
    from eval.scoring.score import _without_stale

    records = _records()
    rows = read_prediction_table(_write_run(tmp_path / "run", records))
    edited, _ = judge.load_record_columns(judge.write_jsonl(_edited(records, {1, 4}), tmp_path / "edited.jsonl"))

    def per_id(self, record_id):
        raise AssertionError("a record looked up one id at a time")

    monkeypatch.setattr(type(edited), "index_of", per_id)
    kept, n_stale = _without_stale(rows, edited, tmp_path / "run", tmp_path / "edited.jsonl")
    assert n_stale == 2
    assert kept.column("id").to_pylist() == [r.id for i, r in enumerate(records) if i not in {1, 4}]


def test_the_stale_filter_reads_the_records_ids_once(tmp_path):
    """The records' ids become one Arrow array, read once for both joins (which rows are stale, and whether any row
    left is of a record): the rows kept and the count are the same."""
    from eval.scoring.score import _without_stale

    records = _records()
    rows = read_prediction_table(_write_run(tmp_path / "run", records))
    edited, _ = judge.load_record_columns(judge.write_jsonl(_edited(records, {1, 4}), tmp_path / "edited.jsonl"))

    class CountedIds:
        """``edited`` with each read of its ids counted."""

        reads = 0

        def __getattr__(self, name):
            return getattr(edited, name)

        @property
        def ids(self):
            CountedIds.reads += 1
            return edited.ids

    kept, n_stale = _without_stale(rows, CountedIds(), tmp_path / "run", tmp_path / "edited.jsonl")
    assert (n_stale, CountedIds.reads) == (2, 1)
    assert kept.column("id").to_pylist() == [r.id for i, r in enumerate(records) if i not in {1, 4}]
