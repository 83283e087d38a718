"""DeepSpeed ZeRO-3 on CPU: the seq2seq recipe in one process started without a launcher (as `judge-train --config
configs/train/t-lite/seq2seq.yaml --lora true` on one GPU), the regression recipe in two through torchrun.

Both run the real ``python -m train.cli`` in a subprocess (DeepSpeed initialises torch.distributed, which must not
leak into the rest of the test session). Their collectives go through gloo: the recipe keeps DeepSpeed from
JIT-compiling its shared-memory CPU op (train/training_arguments.py ``_cpu_collectives_through_gloo``), and the
two-rank test checks that nothing was built.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.fixtures_models import free_port
from tests.support.fixtures_train import OVERFIT_OVERRIDES, REPO_ROOT

ZERO3 = str(REPO_ROOT / "configs" / "deepspeed" / "zero3.json")


def _run(cmd: list[str], env: dict[str, str], log: Path, timeout: int = 420) -> dict:
    """Run a judge-train command; on failure show its log; return its run.json."""
    with log.open("w") as out:
        proc = subprocess.run(cmd, env=env, stdout=out, stderr=subprocess.STDOUT, cwd=REPO_ROOT, timeout=timeout, check=False)
    text = log.read_text(errors="replace")
    assert proc.returncode == 0, f"exit {proc.returncode}\n{text[-6000:]}"
    output_dir = Path(cmd[cmd.index("--output_dir") + 1])
    return json.loads((output_dir / "run.json").read_text(encoding="utf-8"))


def _losses(record: dict) -> list[float]:
    return [e["loss"] for e in record["result"]["log_history"] if "loss" in e and "train_loss" not in e]


def test_zero3_one_process_trains_like_the_plain_trainer(seq2seq_run, overfit_base_dir, overfit_records_path,
                                                         train_subprocess_env, tmp_path):  # fmt: skip
    """ZeRO-3 (one rank, no launcher: none of RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT set, where
    DeepSpeed would look for MPI) runs the seq2seq recipe to an export that reloads and matches the live model, the
    learning rate ends at 0, its first loss equals the plain trainer's on the same data and its first step lowers
    the loss as the plain trainer's does (the first two learning rates of a linear decay do not depend on the run
    length)."""
    overrides = [f"--{key}={value}" for key, value in OVERFIT_OVERRIDES.items() if value is not None]
    cmd = [
        sys.executable, "-m", "train.cli", "--config", "configs/train/tiny/seq2seq.yaml", *overrides,
        "--output_dir", str(tmp_path / "run"), "--model_name_or_path", str(overfit_base_dir),
        "--data", str(overfit_records_path), "--deepspeed", ZERO3, "--max_steps", "2", "--disable_tqdm",
    ]  # fmt: skip
    launcher = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")
    env = {k: v for k, v in train_subprocess_env.items() if k not in launcher}
    record = _run(cmd, env, tmp_path / "zero3.log")
    assert record["launch"]["world_size"] == 1
    assert record["config"]["deepspeed"] == ZERO3
    assert record["result"]["final_learning_rate"] == 0.0
    assert record["result"]["export_report"]["lm_head_norm"] > 0
    losses = _losses(record)
    assert len(losses) == 2 and all(math.isfinite(v) for v in losses)
    plain = [e["loss"] for e in seq2seq_run.log_history if "loss" in e and "train_loss" not in e][:2]
    # The first loss is the same forward pass on the same weights. The second follows one Adam step at lr 1e-2,
    # which is about lr * sign(gradient): a coordinate whose gradient is near Adam's eps turns a summation-order
    # difference (DeepSpeed reduces flattened fp32 partitions, torch each tensor) into a visible one. Another CI
    # machine measured 2.8e-4 relative on the second loss, so it is held to the plain trainer's step instead: the
    # same drop within 1 % (a run that skipped or mis-scaled the step is off by far more).
    assert losses[0] == pytest.approx(plain[0], rel=1e-4)
    assert abs((losses[0] - losses[1]) - (plain[0] - plain[1])) <= 0.01 * abs(plain[0] - plain[1])


def test_zero3_two_processes_through_torchrun(tiny_causal_dir, train_subprocess_env, tmp_path):
    """torchrun --nproc_per_node 2: two CPU ranks shard the regression judge under ZeRO-3; accumulation drops to 1
    to keep the global batch; rank 0 gathers 16-bit weights, and the export's score head is real (shape, non-zero
    norm, same scores as the live sharded model)."""
    cmd = [
        sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port", str(free_port()),
        "-m", "train.cli", "--config", "configs/train/tiny/regression.yaml",
        "--output_dir", str(tmp_path / "run"), "--model_name_or_path", str(tiny_causal_dir),
        "--deepspeed", ZERO3, "--max_steps", "2", "--disable_tqdm",
    ]  # fmt: skip
    extensions = tmp_path / "torch_extensions"
    env = {**train_subprocess_env, "OMP_NUM_THREADS": "1", "TORCH_EXTENSIONS_DIR": str(extensions)}  # two ranks, two cores
    record = _run(cmd, env, tmp_path / "torchrun.log")
    # No op was JIT-compiled for the two ranks' all-reduces (DeepSpeed's shared-memory op took ~60 CPU-s to build).
    assert not extensions.exists() or not any(extensions.iterdir()), sorted(extensions.rglob("*"))
    launch = record["launch"]
    assert (launch["world_size"], launch["gradient_accumulation_steps"], launch["global_batch_size"]) == (2, 1, 2)
    check = record["result"]["export_report"]
    assert check["score_norm"] > 0 and check["max_score_diff"] <= 1e-4 and check["max_logit_diff"] <= 1e-4
    assert record["result"]["final_learning_rate"] == 0.0
    assert all(math.isfinite(v) for v in _losses(record)) and len(_losses(record)) == 2
    export = Path(record["result"]["export_dir"])
    assert (export / "generator" / "config.json").is_file() and (export / "model.safetensors").is_file()
