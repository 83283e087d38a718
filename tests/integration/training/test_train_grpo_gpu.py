"""The GRPO recipe generating with vLLM on a GPU (``use_vllm: true``, ``vllm_mode: colocate``), on the tiny Qwen3.

What the CPU tests cannot try (tests/integration/training/test_train_grpo.py generates with transformers): trl's
colocated vLLM engine starting inside the training process, generating each group, and taking the policy's weights
after every step. Run where CUDA and a vLLM on trl's line (``train.grpo.TRAINING_VLLM``, the ``grpo-gpu`` extra) are
installed; anywhere else the test skips and says which is missing.

    .venv-grpo/bin/python -m pytest tests/integration/training/test_train_grpo_gpu.py -q
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

from train.config import load_config
from tests.support.train_grpo import TINY_GRPO

#: Two steps of groups of 4 over 2 prompts, as the CPU run, with vLLM generating; a small share of the GPU for the
#: engine (a 2-layer model and 16-token completions need little KV cache).
GPU_OVERRIDES = {
    "use_vllm": True, "vllm_mode": "colocate", "vllm_gpu_memory_utilization": 0.2,
    "max_steps": 2, "save_steps": 1, "max_rows": 2, "num_generations": 4, "global_batch_size": 4,
    "per_device_train_batch_size": 4, "max_completion_length": 16, "max_length": 272, "gradient_checkpointing": False,
    "disable_tqdm": True,
}  # fmt: skip


def _gpu_and_training_vllm() -> str | None:
    """Why the test cannot run here, or None."""
    import torch

    if not torch.cuda.is_available():
        return "no CUDA device"
    from train import grpo
    from train.config import ConfigError

    try:
        grpo.check_training_vllm(grpo.installed_vllm())
    except ConfigError as error:
        return str(error)
    return None


def test_grpo_generates_with_colocated_vllm_and_exports_an_integer_judge(tmp_path: Path) -> None:
    """Two GRPO steps with vLLM colocated in the training process: every step logs each reward's mean, the failed
    share and the completions' length; vLLM is what generated (its engine lives in this process); the export is a
    Qwen3 judge whose manifest says the integer format."""
    why = _gpu_and_training_vllm()
    if why is not None:
        pytest.skip(f"GRPO with vLLM needs a GPU and trl's vLLM line: {why}")
    from judge.checkpoints import checkpoint_verdict_format
    from train import grpo

    config = load_config(TINY_GRPO, {**GPU_OVERRIDES, "output_dir": str(tmp_path / "run")})
    result = grpo.main(config)

    assert "vllm" in sys.modules  # colocate mode builds its engine in this process
    steps = [entry for entry in result.log_history if "reward" in entry]
    assert len(steps) == 2, result.log_history
    for entry in steps:
        for key in ("rewards/format_reward/mean", "rewards/agreement_reward/mean", "verdicts/failed_share",
                    "completions/mean_length"):
            assert math.isfinite(entry[key]), key
        assert 0 < entry["completions/mean_length"] <= 16
    assert checkpoint_verdict_format(Path(result.export_dir)) == "integer"
    assert result.export_report["max_logit_diff"] <= 1e-4
