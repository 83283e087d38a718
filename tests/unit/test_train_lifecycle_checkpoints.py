"""What a checkpoint must hold for ``--resume`` to continue the run, and trainer_args that would quietly do
nothing or break it.

``trainer_args: {save_only_model: true}`` saved checkpoints without optimizer.pt and scheduler.pt, and a
``--resume`` from one restarted the learning-rate schedule and AdamW mid-run. ``load_best_model_at_end`` was
accepted and recorded while the recipes always export the last step. Both are refused when the config loads; a
checkpoint without the optimizer and schedule is refused at ``--resume``, naming it.
"""

from __future__ import annotations

import dataclasses

import pytest

from train.config import ConfigError, Seq2SeqConfig, config_to_dict


def _checkpoint_saved_by_a_real_trainer(folder, **arguments):
    """checkpoint-2 of a 2-step run of the tiny regressor, saved by transformers' Trainer with ``arguments``."""
    from transformers import Trainer, TrainingArguments

    from tests.support.tiny_regressor import regressor, regressor_rows

    args = TrainingArguments(str(folder), per_device_train_batch_size=2, max_steps=2, save_strategy="steps",
                             save_steps=2, use_cpu=True, report_to=[], disable_tqdm=True, **arguments)  # fmt: skip
    Trainer(model=regressor(), args=args, train_dataset=regressor_rows(4)).train()
    return folder / "checkpoint-2"


@pytest.mark.parametrize("save_only_model", [True, False])
def test_a_resume_from_a_checkpoint_without_optimizer_and_schedule_is_refused(tmp_path, monkeypatch, save_only_model):
    from train.output_folder import check_output_dir
    from train.provenance import write_run_json

    monkeypatch.delenv("RANK", raising=False)
    checkpoint = _checkpoint_saved_by_a_real_trainer(tmp_path, save_only_model=save_only_model)
    config = Seq2SeqConfig(output_dir=str(tmp_path))
    write_run_json(tmp_path, config=config_to_dict(config), launch={"world_size": 1})
    resumed = dataclasses.replace(config, resume=True)
    if not save_only_model:  # the Trainer's usual checkpoint: resumed from
        assert check_output_dir(resumed) == checkpoint
        return
    assert not (checkpoint / "optimizer.pt").exists()
    with pytest.raises(ConfigError) as refused:
        check_output_dir(resumed)
    assert f"--resume: {checkpoint} has no optimizer.pt or scheduler.pt" in str(refused.value)


def test_a_deepspeed_checkpoint_keeps_its_optimizer_in_its_global_step_folder(tmp_path):
    """Under DeepSpeed the optimizer is in global_step*, while the schedule stays in scheduler.pt, which transformers
    loads unconditionally at a DeepSpeed resume when the DeepSpeed JSON has no scheduler block (the config refuses
    one): without it the resume is refused naming it, not a FileNotFoundError on every rank after the model loads."""
    from train.output_folder import check_resumable

    checkpoint = tmp_path / "checkpoint-4"
    (checkpoint / "global_step4").mkdir(parents=True)
    with pytest.raises(ConfigError, match=r"checkpoint-4 has no scheduler.pt beside its DeepSpeed global_step\*"):
        check_resumable(checkpoint)
    (checkpoint / "scheduler.pt").write_bytes(b"")
    check_resumable(checkpoint)  # no error: no optimizer.pt needed beside global_step4
    (checkpoint / "global_step4").rmdir()
    with pytest.raises(ConfigError, match="checkpoint-4 has no optimizer.pt "):
        check_resumable(checkpoint)


@pytest.mark.parametrize("key, said", [
    ("save_only_model", "a --resume (slurm/train.sbatch passes one after every preemption) would restart the schedule"),
    ("load_best_model_at_end", "has no effect here: the export is always the model of the last step"),
])  # fmt: skip
def test_trainer_args_that_break_a_resume_or_do_nothing_are_refused(key, said):
    from train.training_arguments import check_trainer_args

    config = Seq2SeqConfig(trainer_args={key: True})
    with pytest.raises(ConfigError) as refused:
        check_trainer_args(config)
    assert f"trainer_args: '{key}'" in str(refused.value) and said in str(refused.value)
    check_trainer_args(Seq2SeqConfig(trainer_args={key: False}))  # off, as the recipes set it: taken
