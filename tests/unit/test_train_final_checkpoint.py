"""``save_total_limit: 1`` with a validation set: the final checkpoint stays, so that a ``--resume`` of the finished
run finds it finished (``train.output_folder.finished_export``) instead of training its last steps again."""

from __future__ import annotations

import json


def test_a_run_trained_to_the_end_keeps_its_final_checkpoint_and_reads_as_finished(tmp_path, monkeypatch):
    """Evaluations at 2, 4 and 6 with a learning rate of 0: checkpoint-2 stays the best. At the end of train()
    transformers deleted every checkpoint but the best one, checkpoint-6 with them; the folder held checkpoint-2
    alone, short of the 6 steps planned, and slurm/train.sbatch's --resume retrained steps 3-6 and exported again
    over the judge."""
    from transformers import Trainer, TrainingArguments

    from tests.support.tiny_regressor import prepared_run, regressor, regressor_rows
    from train.output_folder import finished_export, latest_checkpoint

    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    rows = regressor_rows(8)
    run = prepared_run(tmp_path, export_under_stopper=False)
    args = TrainingArguments(str(tmp_path), per_device_train_batch_size=2, max_steps=6, learning_rate=0.0,
                             save_strategy="steps", save_steps=2, eval_strategy="steps", eval_steps=2,
                             metric_for_best_model="eval_loss", greater_is_better=False, load_best_model_at_end=False,
                             save_total_limit=1, use_cpu=True, report_to=[], disable_tqdm=True)  # fmt: skip
    trainer = Trainer(model=regressor(), args=args, train_dataset=rows, eval_dataset=rows[:4],
                      callbacks=[run.stopper])  # fmt: skip
    result = run.train(trainer)
    assert result.global_step == 6 and not run.stopped
    assert sorted(p.name for p in tmp_path.glob("checkpoint-*")) == ["checkpoint-2", "checkpoint-6"]
    state = json.loads((tmp_path / "checkpoint-6" / "trainer_state.json").read_text())
    assert state["best_model_checkpoint"] == str(tmp_path / "checkpoint-2")  # the best one is still named
    # The export of that run, as the export step records it: a --resume now has nothing to do.
    (tmp_path / "export").mkdir()
    (tmp_path / "export" / "run.json").write_text(json.dumps({"result": {"export_dir": str(tmp_path / "export"),
                                                                         "global_step": 6}}), encoding="utf-8")
    assert finished_export(tmp_path, latest_checkpoint(tmp_path)) == 6


def test_a_run_whose_trainer_kept_only_the_best_checkpoint_reads_as_finished(tmp_path, monkeypatch):
    """A run folder left by a version that let the final checkpoint go: checkpoint-2 of the 6 steps planned, the
    export of step 6. finished_export read it as unfinished, and the --resume trained steps 3-6 again."""
    import dataclasses

    import pytest

    from train.config import Seq2SeqConfig, config_to_dict
    from train.output_folder import RunFinished, check_output_dir
    from train.provenance import update_run_json, write_run_json

    monkeypatch.delenv("RANK", raising=False)
    config = Seq2SeqConfig(output_dir=str(tmp_path))
    write_run_json(tmp_path, config=config_to_dict(config), launch={"world_size": 1})
    (tmp_path / "checkpoint-2").mkdir()
    (tmp_path / "checkpoint-2" / "trainer_state.json").write_text(json.dumps({"global_step": 2, "max_steps": 6}),
                                                                  encoding="utf-8")
    (tmp_path / "export").mkdir()
    update_run_json(tmp_path, result={"global_step": 6, "export_dir": str(tmp_path / "export")})
    (tmp_path / "export" / "run.json").write_bytes((tmp_path / "run.json").read_bytes())
    with pytest.raises(RunFinished) as ended:
        check_output_dir(dataclasses.replace(config, resume=True))
    assert ended.value.code == 0
    assert "is already finished: step 6 is the last step its trainer planned" in ended.value.message
