"""A ``--resume`` trains on the rows the run it continues trained on.

run.json's config records only the data's path: a file rewritten at that path (the data pipeline run again, another
filter) was resumed from the checkpoint's data position, which counts rows of the earlier file, with no warning. The
data section now records ``n_train`` and a fingerprint of the training rows; a resume whose rows differ is refused.
"""

from __future__ import annotations

import json

import pytest

from train.config import ConfigError, Seq2SeqConfig, zero_shot_split


def _rows(n, *, edit=None):
    rows = [{"id": f"r{i}", "prompt": f"prompt {i}", "completion": f"[FEEDBACK] ok {i} [RESULT] 1 [END]",
             "record_id": f"rec{i}"} for i in range(n)]  # fmt: skip
    if edit is not None:
        rows[edit]["completion"] = "[FEEDBACK] another verdict [RESULT] 0 [END]"
    return rows


def _launch(folder, rows, *, resume_from=None):
    """What a recipe does once its rows are built: record them into run.json (``PreparedRun.record_data``)."""
    from train.recipe_steps import PreparedRun
    from train.training_arguments import Launch

    config = Seq2SeqConfig(output_dir=str(folder), resume=resume_from is not None)
    run = PreparedRun(config=config, launch=Launch(1, 1, 2, 2), resume_from=resume_from, base_model="unused",
                      tokenizer=None, dtype=None, stopper=None)  # fmt: skip
    run.record_data({"n_rows": len(rows), "n_eval": 0}, train_rows=rows)
    return json.loads((folder / "run.json").read_text(encoding="utf-8"))["data"]


@pytest.mark.parametrize("changed, counts", [
    (_rows(3), "n_train 4 -> 3"),                 # rows gone from the file
    (_rows(4, edit=2), "n_train 4 -> 4"),         # as many rows, one verdict rewritten
    (list(reversed(_rows(4))), "n_train 4 -> 4"),  # the same rows in another order: another data position
])  # fmt: skip
def test_a_resume_on_training_rows_that_changed_is_refused(tmp_path, monkeypatch, changed, counts):
    monkeypatch.delenv("RANK", raising=False)
    data = _launch(tmp_path, _rows(4))
    assert data["n_train"] == 4 and len(data["train_fingerprint"]) == 64
    checkpoint = tmp_path / "checkpoint-2"
    with pytest.raises(ConfigError) as refused:
        _launch(tmp_path, changed, resume_from=checkpoint)
    assert f"--resume: the training rows differ from those of the run in {tmp_path} ({counts}" in str(refused.value)
    # refused before run.json was written: it still describes the run the checkpoint belongs to
    assert json.loads((tmp_path / "run.json").read_text(encoding="utf-8"))["data"] == data


def test_a_grpo_resume_on_relabelled_rows_is_refused(tmp_path, monkeypatch):
    """GRPO's rows have no completion: its rewards read the experts' scores, so a label changed on disk (the same
    prompts) is other training too."""
    monkeypatch.delenv("RANK", raising=False)
    rows = [{"id": f"r{i}", "prompt": f"prompt {i}", "expert_scores": [1.0, 2.0], "reference_scores": [1.0, 2.0]}
            for i in range(4)]  # fmt: skip
    _launch(tmp_path, rows)
    relabelled = [dict(row) for row in rows]
    relabelled[1]["expert_scores"] = [0.0, 0.0]
    with pytest.raises(ConfigError, match="the training rows differ"):
        _launch(tmp_path, relabelled, resume_from=tmp_path / "checkpoint-2")


def test_a_resume_on_the_same_rows_goes_on_and_fields_that_do_not_train_may_change(tmp_path, monkeypatch):
    monkeypatch.delenv("RANK", raising=False)
    data = _launch(tmp_path, _rows(4))
    same = [{**row, "record_id": "renamed"} for row in _rows(4)]  # not a trained field
    assert _launch(tmp_path, same, resume_from=tmp_path / "checkpoint-2") == data


def test_a_resume_of_a_run_json_without_a_fingerprint_goes_on_with_a_warning(tmp_path, monkeypatch, caplog):
    from train.provenance import update_run_json

    monkeypatch.delenv("RANK", raising=False)
    _launch(tmp_path, _rows(4))
    update_run_json(tmp_path, data={"n_rows": 4})  # an older version's data section
    with caplog.at_level("WARNING", logger="train.recipe_steps"):
        assert _launch(tmp_path, _rows(3), resume_from=tmp_path / "checkpoint-2")["n_train"] == 3
    assert "records no fingerprint of the training rows" in caplog.text


def test_every_row_over_max_length_exits_2_with_one_line(tmp_path, capsys, tiny_causal_dir,
                                                         recipe_tokenizer_loaded_once):
    """Every sample row is longer than 16 tokens: the run exits 2 with one line, as --help promises for "no training
    rows left", not with a ValueError traceback and exit 1."""
    from pathlib import Path

    from train.cli import main

    repo = Path(__file__).resolve().parents[2]
    code = main(["--config", str(repo / "configs/train/tiny/seq2seq.yaml"), "--output-dir", str(tmp_path / "run"),
                 "--model-name-or-path", str(tiny_causal_dir), "--max-length", "16"])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.startswith("judge-train run: error: data: no training rows left in sample (max_length 16,")
    assert "too_long=" in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_the_data_report_counts_every_row_built(qwen_tokenizer):
    """run.json's counts add up: the rows kept are the training rows, those max_rows cut and the validation rows
    held out of them; rows dropped from eval_data are counted in the eval section, not only logged."""
    import dataclasses

    from train.build_data import rows_for_config
    from train.config import load_config

    tiny = load_config("configs/train/tiny/seq2seq.yaml")  # sample data, max_length 256, max_rows 4
    split = dataclasses.replace(tiny, eval_fraction=0.3, max_rows=2)
    train, held_out, report = rows_for_config(split, qwen_tokenizer)
    data = report.to_dict()
    assert data["cut_by_max_rows"] > 0 and len(train) == 2
    assert data["n_rows"] == len(train) + data["cut_by_max_rows"] + data["eval"]["n_rows"]
    assert data["eval"] == {"source": "held out of data by instruction_group (eval_fraction 0.3)",
                            "n_rows": len(held_out), "dropped": {}}  # fmt: skip

    given = dataclasses.replace(tiny, eval_data="sample", max_rows=None)
    train, held_out, report = rows_for_config(given, qwen_tokenizer)
    data = report.to_dict()
    assert data["cut_by_max_rows"] == 0 and data["n_rows"] == len(train)
    assert data["eval"]["source"] == "sample" and data["eval"]["n_rows"] == len(held_out)
    assert data["eval"]["dropped"]["too_long"] > 0 and data["eval"]["dropped"]["zero_shot"] > 0
    assert data["eval"]["n_verdicts"] == data["eval"]["n_rows"] + sum(data["eval"]["dropped"].values())


@pytest.mark.parametrize("eval_data", [None, "sample"])
def test_the_data_report_still_adds_up_once_a_validation_row_is_too_long_in_its_trained_ids(qwen_tokenizer,
                                                                                              eval_data):
    """drop_long_examples drops a validation row over max_length in the ids the recipe trains: one held out of data
    leaves n_rows with it (n_rows = n_train + cut_by_max_rows + eval.n_rows), while eval_data's rows were never in
    n_rows and leave eval.n_rows alone."""
    import dataclasses

    from train.build_data import drop_long_examples, rows_for_config
    from train.config import load_config

    tiny = load_config("configs/train/tiny/seq2seq.yaml")  # sample data, max_length 256
    config = dataclasses.replace(tiny, eval_fraction=0.0 if eval_data else 0.3, eval_data=eval_data, max_rows=2)
    train, held_out, report = rows_for_config(config, qwen_tokenizer)
    n_rows, n_eval = report.n_rows, report.eval["n_rows"]
    assert len(held_out) > 1
    fits, too_long = {"input_ids": [0] * config.max_length}, {"input_ids": [0] * (config.max_length + 1)}
    drop_long_examples(config, report, train, [fits] * len(train))
    held_out, _ = drop_long_examples(config, report, held_out, [too_long] + [fits] * (len(held_out) - 1),
                                     validation=True)  # fmt: skip
    data = report.to_dict()
    assert data["eval"]["n_rows"] == len(held_out) == n_eval - 1 and data["eval"]["dropped"]["too_long"] >= 1
    if eval_data is None:
        assert data["n_rows"] == n_rows - 1 == len(train) + data["cut_by_max_rows"] + data["eval"]["n_rows"]
    else:
        assert data["n_rows"] == n_rows == len(train) + data["cut_by_max_rows"]


def test_run_json_records_the_split_the_training_held_out(tmp_path, monkeypatch):
    """The held-out task types, the count of held-out criteria and the split file's sha256, as read when the rows
    were chosen: a card written later names these, not what the split file (or a newer package's) says then."""
    import hashlib

    from judge.splits import default_split_path, load_split_spec

    monkeypatch.delenv("RANK", raising=False)
    data = _launch(tmp_path, _rows(4))
    spec = load_split_spec()
    assert data["held_out_task_types"] == sorted(spec.task_types)
    assert data["held_out_criteria"] == len(spec.criteria)
    assert data["split_sha256"] == hashlib.sha256(default_split_path().read_bytes()).hexdigest()


def test_the_split_hash_is_of_the_bytes_the_held_out_lists_were_read_from(tmp_path):
    """A split file edited after the data step read it: run.json pairs the lists the rows were chosen by with their
    own file's sha256, not the edited file's beside the earlier lists."""
    import hashlib

    from judge.splits import default_split_path
    from train.provenance import held_out_split

    split = tmp_path / "split.yaml"
    original = default_split_path().read_bytes()
    split.write_bytes(original)
    config = Seq2SeqConfig(output_dir=str(tmp_path / "run"), zero_shot="refuse", split_file=str(split))
    chosen = zero_shot_split(config)  # the data step's read
    split.write_bytes(original + b"\n# edited\n")
    recorded = held_out_split(config)
    assert recorded["held_out_task_types"] == sorted(chosen.task_types)
    assert recorded["split_sha256"] == hashlib.sha256(original).hexdigest()
