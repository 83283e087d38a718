"""Checkpoints: a run stopped by SIGUSR1 saves, and --resume reaches the uninterrupted run's step, losses, weights and
last checkpoint (optimizer, scheduler, RNG and trainer state)."""

from __future__ import annotations

import dataclasses
import os
import signal
from pathlib import Path

import numpy as np
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


def assert_same_state(got, want, where: str = "") -> None:
    """``got`` and ``want`` hold the same keys and the same values, recursively: tensors and floats to training's
    tolerance (the weights' own), arrays, integers and text exactly. Every leaf compared is counted, so two empty
    states are no match."""
    assert _same(got, want, where) > 0, f"{where}: nothing to compare"


def _same(got, want, where: str) -> int:
    if isinstance(want, dict):
        assert isinstance(got, dict) and sorted(map(str, got)) == sorted(map(str, want)), where
        return sum(_same(got[k], want[k], f"{where}/{k}") for k in want)
    if isinstance(want, (list, tuple)):
        assert isinstance(got, (list, tuple)) and len(got) == len(want), where
        return sum(_same(g, w, f"{where}[{i}]") for i, (g, w) in enumerate(zip(got, want)))
    if isinstance(want, torch.Tensor):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6, msg=where)
    elif isinstance(want, np.ndarray):
        np.testing.assert_array_equal(got, want, err_msg=where)
    elif isinstance(want, float) and not isinstance(got, bool):
        assert got == pytest.approx(want, rel=1e-5, abs=1e-6), where
    else:
        assert got == want, where
    return 1


def assert_same_checkpoint(got: Path, want: Path) -> None:
    """Two checkpoint folders hold the same optimizer, scheduler and RNG states and the same trainer state (step,
    epoch and every log entry); the weights are compared apart, in their export."""
    import json

    for name in ("optimizer.pt", "scheduler.pt", "rng_state.pth"):
        assert_same_state(torch.load(got / name, weights_only=False), torch.load(want / name, weights_only=False),
                          f"{got.name}/{name}")
    states = [json.loads((folder / "trainer_state.json").read_text()) for folder in (got, want)]
    for key in ("global_step", "epoch", "log_history"):
        assert_same_state(states[0][key], states[1][key], f"{got.name}/trainer_state.json/{key}")


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
    assert_same_state(_weights(Path(resumed.export_dir)), _weights(Path(regression_run.export_dir)), "export")
    # Past the weights, the whole state a further resume would start from: both runs saved their last step.
    last = latest_checkpoint(config.output_dir)
    assert last.name == latest_checkpoint(regression_run.output_dir).name == f"checkpoint-{resumed.global_step}"
    assert_same_checkpoint(last, latest_checkpoint(regression_run.output_dir))
