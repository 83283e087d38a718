"""Training records repeating another's content under another id: counted and kept, said in the data report and by
``build-data``."""

from __future__ import annotations

import logging

from tests.support.sample_training_lines import kept_record_line as _kept_record_line
from tests.support.sample_training_lines import write_lines as _write
from train import build_data


def test_a_record_repeating_another_under_another_id_is_counted_and_kept(tmp_path, caplog):
    """Only repeated lines are dropped by the loader: a copy under another id trained twice, unreported."""
    line = _kept_record_line()
    path = _write(tmp_path / "dup.jsonl", [line, {**line, "id": line["id"] + "-copy"}])
    with caplog.at_level(logging.WARNING, logger="train.build_data"):
        rows, report = build_data.build_rows(build_data.load_training_records(str(path)), recipe="seq2seq",
                                             zero_shot="refuse")  # fmt: skip
    assert len(rows) == 2 * len(line["expert_scores"]) == report.n_rows
    assert report.repeated_content == 1 and report.to_dict()["repeated_content"] == 1
    assert report.summary().endswith("; kept 1 record(s) repeating an earlier record's content under another id")
    assert "1 record(s) repeat an earlier record's content under another id: kept" in caplog.text
    unique, unique_report = build_data.build_rows(build_data.load_training_records(str(path))[:1], recipe="seq2seq",
                                                  zero_shot="refuse")  # fmt: skip
    assert unique_report.repeated_content == 0 and "repeated_content" not in unique_report.to_dict()


def test_build_data_prints_the_repeated_content(tmp_path, capsys):
    line = _kept_record_line()
    path = _write(tmp_path / "dup.jsonl", [line, {**line, "id": line["id"] + "-copy"}])
    assert build_data.main(["--data", str(path), "--recipe", "seq2seq"]) == 0
    assert "kept 1 record(s) repeating an earlier record's content under another id" in capsys.readouterr().out
