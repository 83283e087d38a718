"""The refusals a training launch's config, its launcher's ranks, CUDA and its output folder's contents decide,
made before the run folder is held and again under its lock (``check_launch``).

Above ``train.output_folder``, ``train.training_arguments`` and ``train.trainer_preflight``, which import one another's
lower layers: kept in one of them, it closed a cycle of imports.
"""

from __future__ import annotations

import os
from typing import Any

__all__ = ["check_launch"]


def check_launch(config: Any, *, before_the_lock: bool = False) -> tuple[Any, Any]:
    """The refusals of ``train.recipe_steps.prepare`` that the config, the launcher's ranks, CUDA and the output
    folder's contents decide: the batch arithmetic, the DeepSpeed JSON's accumulation and bf16 against this launch's,
    the output folder's rules (``train.output_folder.check_output_dir``: ``--resume`` with nothing to resume, a
    checkpoint or finished export without ``--overwrite-output-dir``, a resume that changes a kept setting) and W&B's
    login. Nothing is written: W&B is pointed at the run folder through ``WANDB_DIR`` only.

    ``judge-train`` makes them on rank 0 before it holds the run folder too (``before_the_lock``: warnings unlogged):
    made only under the lock, a refusal left the lock file behind, and the folder itself where it was missing.
    ``prepare`` makes them again under the lock, and that decides: the folder may change in between.

    Returns:
        The batch arithmetic, and the checkpoint to resume from (None for a fresh run).

    Raises:
        ConfigError: a global batch that does not divide, a DeepSpeed JSON whose accumulation or bf16 differs from
            this launch's, an output folder that would mix runs, or ``report_to`` wandb without a way to log in
            (``train.trainer_preflight.check_wandb_login``).
        RunFinished: ``--resume`` of a finished run.
    """
    from train.output_folder import UNLOGGED, check_output_dir
    from train.trainer_preflight import check_wandb_login, reports_to_wandb
    from train.training_arguments import launch_arithmetic, use_bf16

    launch = launch_arithmetic(config)
    # the DeepSpeed JSON's accumulation and bf16 against this launch's, known only here (ranks, CUDA)
    config.check_deepspeed_launch(launch.gradient_accumulation_steps, use_bf16(config))
    # Before the lock (judge-train's rank 0) nothing is logged: prepare checks again under the lock and logs the same
    # warnings (checkpoints passed over, a config that cannot be compared), so they come once.
    resume_from = check_output_dir(config, log=UNLOGGED if before_the_lock else None)
    if reports_to_wandb(config):  # "all" too, with wandb installed (a substring test missed it)
        os.environ.setdefault("WANDB_DIR", config.output_dir)
        check_wandb_login(config)  # after WANDB_DIR: W&B's process-wide setup keeps the one it first sees
    return launch, resume_from
