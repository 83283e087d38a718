"""A new user's swapped inputs, each refused in one line naming the path and what it is: a run folder given as
--data, a config or the data file given as score's --predictions, a checkpoint's file given as its folder. Expected
messages are written out by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from eval.cli import main
from eval.input_checks import refuse_missing_predictions
from judge.checkpoints import CheckpointNotFound, resolve_checkpoint
from judge.record_sources import load_record_columns, load_records
from judge.sample_data import sample_data_path
from tests.support.deep_json import nested_arrays


def _run_folder(root: Path, *, scored: bool) -> Path:
    """A judge-eval run folder: its predictions, and score's items.parquet when ``scored``."""
    folder = root / "run"
    folder.mkdir()
    (folder / "predictions.jsonl").write_text(json.dumps({"id": "s0001", "parse_ok": False}) + "\n", encoding="utf-8")
    (folder / "run.json").write_text("{}", encoding="utf-8")
    if scored:  # any Parquet file in it: the folder was read as a data set's shards
        pq.write_table(pa.table({"id": ["s0001"], "score": [1.0]}), folder / "items.parquet")
    return folder


@pytest.mark.parametrize("scored", [True, False], ids=["scored", "unscored"])
@pytest.mark.parametrize("reader", [load_records, load_record_columns], ids=["records", "columns"])
def test_a_run_folder_given_as_data_is_named_a_run_not_read_as_shards(tmp_path, scored, reader):
    # scored: its items.parquet was read as a shard ("field 'instruction': is missing"); unscored: it was told to
    # give its own predictions.jsonl as the data
    folder = _run_folder(tmp_path, scored=scored)
    with pytest.raises(ValueError) as caught:
        reader(folder)
    assert str(caught.value) == (f"{folder}: a judge-eval run folder (it holds predictions.jsonl, a judge's verdicts), "
                                 "not labelled records; give the data the run judged (its run.json's `data`)")


def test_judge_eval_run_names_a_run_folder_given_as_data(tmp_path, capsys):
    folder = _run_folder(tmp_path, scored=True)
    code = main(["run", "--judge", "http://127.0.0.1:9/v1", "--data", str(folder), "--out", str(tmp_path / "out")])
    assert code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"judge-eval run: error: {folder}: a judge-eval run folder (it holds predictions.jsonl, a judge's verdicts), "
        "not labelled records; give the data the run judged (its run.json's `data`)")
    assert not (tmp_path / "out").exists()


def test_a_config_file_given_as_predictions_is_refused_before_data_is_asked_for(tmp_path):
    # without --data, score asked for --data ("the run folder ... has no run.json naming the data")
    config = tmp_path / "seq2seq.yaml"
    config.write_text("learning_rate: 0.001\n", encoding="utf-8")
    with pytest.raises(ValueError) as caught:
        refuse_missing_predictions(str(config))
    assert str(caught.value) == (f"--predictions {config}: not a predictions.jsonl (JSONL rows written by judge-eval "
                                 "run)")


def test_score_names_the_data_file_given_as_predictions(tmp_path, capsys):
    records = tmp_path / "records.jsonl"
    # a byte order mark, as a file saved by a Windows editor starts
    records.write_bytes(b"\xef\xbb\xbf" + sample_data_path().read_bytes().splitlines(keepends=True)[0])
    code = main(["score", "--predictions", str(records)])
    assert code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"judge-eval score: error: --predictions {records}: holds POLLUX records (instruction, answer, "
        "criteria_name, rubrics: what --data takes), not a judge's predictions; give the run folder `judge-eval run` "
        "wrote")


def test_a_predictions_file_is_not_taken_for_records(tmp_path):
    run = _run_folder(tmp_path, scored=False)
    refuse_missing_predictions(str(run))  # a prediction row passes
    refuse_missing_predictions(str(run / "predictions.jsonl"))


def test_a_checkpoints_file_given_as_its_folder_names_the_folder(tmp_path):
    # was "no such folder, and not a hub id": the file is there
    export = tmp_path / "runs" / "tiny" / "export"
    export.mkdir(parents=True)
    (export / "config.json").write_text("{}", encoding="utf-8")
    with pytest.raises(CheckpointNotFound) as caught:
        resolve_checkpoint(export / "config.json", allow_download=False)
    assert str(caught.value) == (f"{export / 'config.json'}: a file, not a checkpoint folder; give the folder that "
                                 f"holds it ({export})")


def test_a_file_outside_any_checkpoint_names_no_folder_to_give(tmp_path, capsys):
    # A YAML config given as --model (beside --config): its folder is no checkpoint, and naming it sent the user on
    # to a second refusal there.
    from serve.cli import main as serve_main

    config = tmp_path / "configs" / "tiny-cpu.yaml"
    config.parent.mkdir()
    config.write_text("port: 8000\n", encoding="utf-8")
    with pytest.raises(CheckpointNotFound) as caught:
        resolve_checkpoint(config, allow_download=False)
    assert str(caught.value) == f"{config}: a file, not a checkpoint folder"
    capsys.readouterr()
    assert serve_main(["--model", str(config), "--print-config"]) == 2
    assert capsys.readouterr().err == f"judge-serve: error: model: {config}: a file, not a checkpoint folder\n"


def test_judge_eval_run_names_the_folder_of_a_checkpoints_file_given_as_judge(tmp_path, capsys):
    export = tmp_path / "runs" / "tiny" / "export"
    export.mkdir(parents=True)
    (export / "config.json").write_text("{}", encoding="utf-8")
    capsys.readouterr()
    assert main(["run", "--judge", str(export / "config.json"), "--out", str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"judge-eval run: error: judge: {export / 'config.json'}: a file, not a checkpoint folder; give the folder "
        f"that holds it ({export})")
    assert not (tmp_path / "out").exists()


def test_score_names_the_line_of_a_predictions_file_whose_first_row_nests_too_deeply(tmp_path, capsys):
    # the check for a data file given as --predictions read the first line with json.loads, whose RecursionError
    # (nesting past ~1,000 levels) is no ValueError: score ended in a traceback, exit 1
    predictions = tmp_path / "predictions.jsonl"
    predictions.write_text(nested_arrays(100_000) + "\n", encoding="utf-8")
    code = main(["score", "--predictions", str(predictions), "--data", str(sample_data_path())])
    assert code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"judge-eval score: error: {predictions}:1: unreadable JSON: nested too deeply; mend or delete that line "
        "(`judge-eval run` on the same --out then asks its item again), or rerun `judge-eval run --overwrite`")


def test_score_names_a_device_or_pipe_given_as_predictions_for_what_it_is(tmp_path, capsys):
    # /dev/null, or a run folder whose predictions.jsonl is a link to it, was "no predictions.jsonl ... in the
    # folder": a folder that is none, or a file that is there
    run = tmp_path / "run"
    run.mkdir()
    (run / "predictions.jsonl").symlink_to("/dev/null")
    for given, shown in (("/dev/null", "/dev/null"), (str(run), str(run / "predictions.jsonl"))):
        assert main(["score", "--predictions", given, "--data", str(sample_data_path())]) == 2
        assert capsys.readouterr().err.strip().splitlines()[-1] == (
            f"judge-eval score: error: --predictions {given}: {shown} is a character device, not a predictions.jsonl; "
            "give a run folder written by `judge-eval run` (a stream: write it to a file first)")
    assert sorted(p.name for p in run.iterdir()) == ["predictions.jsonl"]
