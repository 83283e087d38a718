"""Checkpoints: a run stopped by SIGUSR1 saves, and --resume reaches the uninterrupted run's step, losses and weights."""

from __future__ import annotations

import dataclasses
import os
import signal
from pathlib import Path

import pytest
import torch

from tests.support.fixtures_train import TINY_REGRESSION
from train.config import ConfigError, load_config
from train.output_folder import latest_checkpoint

#: The tiny regression run has 12 steps of 2 rows (4 rows: 2 steps per epoch). SIGUSR1 arrives during step 2;
#: the stop lands at the end of step 3, mid-epoch, so resuming must restore the data position too.
SIGNAL_AT_STEP = 2


def _send_sigusr1_at(step: int):
    from transformers import TrainerCallback

    class SendSignal(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            if state.global_step == step:
                os.kill(os.getpid(), signal.SIGUSR1)  # what `scancel --signal=USR1` or Slurm's pre-timeout sends

    return SendSignal()


def _weights(folder: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return {k: v for f in sorted(folder.glob("*.safetensors")) for k, v in load_file(str(f)).items()}


def test_a_signalled_run_resumes_to_the_uninterrupted_result(regression_run, tiny_causal_dir, tmp_path):
    """SIGUSR1 -> checkpoint at the end of the step, no export; --resume restores optimizer, scheduler, RNG and data
    position and ends at the same step with the same losses and the same exported weights as the run that was never
    interrupted (the regression_run fixture, same config)."""
    from train import regression

    config = load_config(
        TINY_REGRESSION,
        {"output_dir": str(tmp_path / "run"), "model_name_or_path": str(tiny_causal_dir), "disable_tqdm": True},
    )
    first = regression.main(config, callbacks=(_send_sigusr1_at(SIGNAL_AT_STEP),))
    assert first.stopped_by_signal == signal.SIGUSR1 and first.export_dir is None
    assert first.requeued is False  # no Slurm job here: `judge-train run` would exit 75, not 0
    assert first.global_step == SIGNAL_AT_STEP + 1
    assert latest_checkpoint(config.output_dir).name == f"checkpoint-{first.global_step}"

    with pytest.raises(ConfigError, match="--resume"):
        regression.main(config)  # a fresh run into a folder with checkpoints is refused

    resumed = regression.main(dataclasses.replace(config, resume=True))
    assert resumed.global_step == regression_run.global_step == 12
    assert resumed.final_learning_rate == 0.0

    def losses_after(run, step):
        return [e["loss"] for e in run.log_history if "loss" in e and "train_loss" not in e and e["step"] > step]

    assert losses_after(resumed, first.global_step) == pytest.approx(losses_after(regression_run, first.global_step), rel=1e-5)
    uninterrupted = _weights(Path(regression_run.export_dir))
    for name, tensor in _weights(Path(resumed.export_dir)).items():
        torch.testing.assert_close(tensor, uninterrupted[name], rtol=1e-5, atol=1e-6, msg=name)
